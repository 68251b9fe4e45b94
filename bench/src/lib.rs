//! Benchmarks for Quasar (docs/architecture.md §1, §10): the criterion micro-benchmarks under `benches/`
//! and the `quasar-bench` binary, the performance report a validator operator reads.
//!
//! `quasar-bench` subcommands ([`cmd`]) time their workloads in rounds against baselines
//! measured in the same run ([`measure`]) and write a Markdown report, JSON records and an SVG
//! plot per subcommand ([`report`]). [`summary`] is the ratio summary the criterion benches
//! print after their groups.
#![forbid(unsafe_code)]

pub mod cmd;
pub mod fixtures;
pub mod measure;
pub mod report;
pub mod summary;
