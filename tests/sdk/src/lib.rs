//! aps5-sdk
