//! aps5-elf
