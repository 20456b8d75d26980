//! Test support for e2e/aws.sh: runs [`adze_aws::fault_proxy::FaultProxy`] in front of a moto
//! server so `CreateFleet` launches exactly one pool, the cheapest, as EC2 would. Prints
//! `listening on http://ADDR` and serves until killed.
//!
//! Usage: adze-aws-fault-proxy http://127.0.0.1:MOTO_PORT [TYPE=USD_PER_HOUR ...]
//! With prices, it also answers the Price List API (GetProducts) with them.

use adze_aws::fault_proxy::FaultProxy;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let Some(upstream) = std::env::args().nth(1) else {
        eprintln!("usage: adze-aws-fault-proxy http://HOST:PORT (the moto server)");
        std::process::exit(2);
    };
    let mut prices = std::collections::BTreeMap::new();
    for arg in std::env::args().skip(2) {
        let parsed = arg
            .split_once('=')
            .and_then(|(t, p)| Some((t.to_string(), p.parse::<f64>().ok()?)));
        let Some((t, p)) = parsed else {
            eprintln!("price {arg:?}: expected TYPE=USD_PER_HOUR, e.g. m5.large=0.1");
            std::process::exit(2);
        };
        prices.insert(t, p);
    }
    let proxy = FaultProxy::start(&upstream).await?;
    if !prices.is_empty() {
        proxy.serve_prices(prices);
    }
    println!("listening on {}", proxy.url());
    std::future::pending::<()>().await;
    Ok(())
}
