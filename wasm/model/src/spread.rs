//! What holds for every secret: per-listener counts of a set of connections over many random boots.
