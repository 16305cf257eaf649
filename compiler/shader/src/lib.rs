//! aps5-shader
