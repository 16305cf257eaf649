//! aps5-graph
