//! aps5-nid
