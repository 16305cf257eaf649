//! aps5-cache
