//! Per-instruction metadata for the translator (filled in below).
