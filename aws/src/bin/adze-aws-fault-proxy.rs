//! Test support for e2e/aws.sh: runs [`adze_aws::fault_proxy::FaultProxy`] in front of a moto
//! server so `CreateFleet` launches exactly one pool, the cheapest, as EC2 would. Prints
//! `listening on http://ADDR` and serves until killed.
//!
//! Usage: adze-aws-fault-proxy http://127.0.0.1:MOTO_PORT

use adze_aws::fault_proxy::FaultProxy;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let Some(upstream) = std::env::args().nth(1) else {
        eprintln!("usage: adze-aws-fault-proxy http://HOST:PORT (the moto server)");
        std::process::exit(2);
    };
    let proxy = FaultProxy::start(&upstream).await?;
    println!("listening on {}", proxy.url());
    std::future::pending::<()>().await;
    Ok(())
}
