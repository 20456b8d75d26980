//! `imds-sim`: serves the IMDSv2 simulator on a loopback port, driven over its `/_sim/` admin API.

use std::net::SocketAddr;

use adze_imds_sim::Sim;
use anyhow::Context;
use clap::Parser;

#[derive(Parser)]
#[command(about = "IMDSv2 simulator: tokens, spot/rebalance/maintenance events, injectable faults")]
struct Args {
    /// Address to listen on; port 0 picks a free port (printed on stdout).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    #[arg(long, default_value = "i-0123456789abcdef0")]
    instance_id: String,
    /// Write the chosen port here once listening (for scripts).
    #[arg(long)]
    port_file: Option<std::path::PathBuf>,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let args = Args::parse();
    let sim = Sim::new(&args.instance_id);
    let (addr, task) = sim
        .serve(args.listen)
        .await
        .with_context(|| format!("binding {}", args.listen))?;
    println!("listening on {addr}");
    if let Some(f) = &args.port_file {
        std::fs::write(f, addr.port().to_string())
            .with_context(|| format!("writing {}", f.display()))?;
    }
    tokio::select! {
        _ = task => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    Ok(())
}
