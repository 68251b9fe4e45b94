//! Process plumbing shared by the `quasar-node` and `thresholdd` binaries: logging, the tokio
//! runtime, and the shutdown signal.

/// How a binary writes its log lines to stderr (`--log-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event (colours on a terminal).
    #[default]
    Text,
    /// One JSON object per line (tracing-subscriber's JSON format: `timestamp`, `level`,
    /// `fields`, `target`, `span`), for log collectors.
    Json,
}

/// Logs to stderr in `format`, filtered by `RUST_LOG` (`default_filter` when it is unset or
/// invalid, in `RUST_LOG`'s syntax: `info`, `off`, …).
pub fn init_tracing(format: LogFormat, default_filter: &str) {
    let mut filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    // arkworks opens a span per gadget call and its constraint system captures the span stack
    // of every constraint while a subscriber listens: tens of GB for the rollup circuit.
    if let Ok(off) = "gr1cs=off".parse() {
        filter = filter.add_directive(off);
    }
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
        LogFormat::Json => builder.json().with_current_span(true).init(),
    }
}

/// The multi-threaded tokio runtime of a binary.
pub fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))
}

/// Resolves on SIGINT or SIGTERM.
pub async fn interrupted() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}
