//! Benchmark measurement and report rendering (see issue: benchmark and roofline).
