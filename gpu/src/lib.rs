//! QuasarGPU adapter (DESIGN.md §1, §7).
//!
//! This crate will hold the batching dispatcher that stacks batched NTT and MSM requests from many
//! callers into dense batches, and the backends that run them: an optimized CPU backend that is
//! always present, and a CUDA backend behind the `cuda` feature. It implements the acceleration
//! trait that `quasar-crypto` defines, so lanes and provers run the same code with or without an
//! accelerator.
//!
//! Nothing is built here yet: the foundation issue needs no batched arithmetic. Callers use
//! `quasar-crypto` directly until the adapter exists.
#![forbid(unsafe_code)]
