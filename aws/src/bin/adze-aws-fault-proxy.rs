//! Test support for e2e/aws.sh: runs [`adze_aws::fault_proxy::FaultProxy`] in front of a moto
//! server so `CreateFleet` launches exactly one pool, as EC2 would. Prints
//! `listening on http://ADDR` and serves until killed.
//!
//! Usage: adze-aws-fault-proxy http://127.0.0.1:MOTO_PORT [OPTION ...] [TYPE=USD_PER_HOUR ...]
//!
//! With prices, it also answers the Price List API (GetProducts) with them. Options make it as
//! unkind as EC2 (see the module docs of `fault_proxy`):
//!   --allocation cheapest|not-cheapest   which healthy override a fleet launches
//!   --describe-lag SECONDS               new instances missing from DescribeInstances that long
//!   --throttle BURST:PER_SECOND          token buckets for EC2 calls (RequestLimitExceeded)
//!   --refuse TYPE=CODE                   launches of TYPE (or *) refused with EC2 error CODE

use std::time::Duration;

use adze_aws::fault_proxy::{Allocation, FaultProxy, Unkind};

fn usage(msg: &str) -> ! {
    eprintln!("adze-aws-fault-proxy: {msg}");
    eprintln!(
        "usage: adze-aws-fault-proxy http://HOST:PORT [--allocation cheapest|not-cheapest] [--describe-lag SECONDS] [--throttle BURST:PER_SECOND] [--refuse TYPE=CODE ...] [TYPE=USD_PER_HOUR ...]"
    );
    std::process::exit(2);
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let Some(upstream) = args.next() else {
        usage("the moto server's URL is missing");
    };
    let mut prices = std::collections::BTreeMap::new();
    let mut unkind = Unkind::default();
    let mut refusals = Vec::new();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .unwrap_or_else(|| usage(&format!("{name} needs a value")))
        };
        match arg.as_str() {
            "--allocation" => {
                unkind.allocation = match value("--allocation").as_str() {
                    "cheapest" => Allocation::Cheapest,
                    "not-cheapest" => Allocation::NotCheapest,
                    other => usage(&format!("--allocation {other:?}: cheapest or not-cheapest")),
                }
            }
            "--describe-lag" => {
                let v = value("--describe-lag");
                // try_from: a negative, NaN or huge number is a usage error, not a panic.
                unkind.describe_lag = v
                    .parse()
                    .ok()
                    .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
                    .unwrap_or_else(|| usage(&format!("--describe-lag {v:?}: seconds")));
            }
            "--throttle" => {
                let v = value("--throttle");
                let parsed = v
                    .split_once(':')
                    .and_then(|(b, r)| Some((b.parse().ok()?, r.parse().ok()?)));
                let Some((burst, rate)) = parsed else {
                    usage(&format!("--throttle {v:?}: BURST:PER_SECOND, e.g. 20:5"));
                };
                unkind.throttle = Some((burst, rate));
            }
            "--refuse" => {
                let v = value("--refuse");
                let Some((t, code)) = v.split_once('=') else {
                    usage(&format!(
                        "--refuse {v:?}: TYPE=CODE, e.g. t3.small=UnauthorizedOperation"
                    ));
                };
                refusals.push((t.to_string(), code.to_string()));
            }
            _ => {
                let parsed = arg
                    .split_once('=')
                    .and_then(|(t, p)| Some((t.to_string(), p.parse::<f64>().ok()?)));
                let Some((t, p)) = parsed else {
                    usage(&format!(
                        "{arg:?}: expected an option or TYPE=USD_PER_HOUR, e.g. m5.large=0.1"
                    ));
                };
                prices.insert(t, p);
            }
        }
    }
    let proxy = FaultProxy::start(&upstream).await?;
    if !prices.is_empty() {
        proxy.serve_prices(prices);
    }
    eprintln!("unkind: {unkind:?}, refusals: {refusals:?}");
    proxy.set_unkind(unkind);
    for (t, code) in refusals {
        proxy.refuse(&t, &code);
    }
    println!("listening on {}", proxy.url());
    std::future::pending::<()>().await;
    Ok(())
}
