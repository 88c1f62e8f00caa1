//! GPU operations of the bottleneck-model experiments (seed 003): being written.
