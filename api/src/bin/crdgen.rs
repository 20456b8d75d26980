//! Prints Adze's CRDs, or writes one file per CRD.
//!
//! Usage: `crdgen [--out DIR] [--without-cel] [--capacity-buffers]`; the flags are described
//! in [`crds::CRDGEN_FLAGS`], which `--help` prints.

use std::{path::PathBuf, process::ExitCode};

use adze_api::crds;

const USAGE: &str = "usage: crdgen [--out DIR] [--without-cel] [--capacity-buffers]";

fn main() -> ExitCode {
    let mut out: Option<PathBuf> = None;
    let mut without_cel = false;
    let mut capacity_buffers = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--out" => match args.next() {
                Some(dir) => out = Some(dir.into()),
                None => return fail("--out needs a directory"),
            },
            "--without-cel" => without_cel = true,
            "--capacity-buffers" => capacity_buffers = true,
            "-h" | "--help" => {
                println!("{USAGE}\n");
                for (flag, value, help) in crds::CRDGEN_FLAGS {
                    println!("  {:<22}{help}", format!("{flag} {value}"));
                }
                return ExitCode::SUCCESS;
            }
            other => return fail(&format!("unexpected argument {other:?}")),
        }
    }

    let mut all = if capacity_buffers {
        vec![crds::capacity_buffer()]
    } else {
        crds::all()
    };
    if without_cel {
        all = all.iter().map(crds::without_cel).collect();
    }
    let Some(dir) = out else {
        print!("{}", crds::to_multi_doc_yaml(&all));
        return ExitCode::SUCCESS;
    };
    if let Err(err) = std::fs::create_dir_all(&dir) {
        return fail(&format!("cannot create {}: {err}", dir.display()));
    }
    for crd in &all {
        let path = dir.join(crds::file_name(crd));
        if let Err(err) = std::fs::write(&path, crds::to_yaml(crd)) {
            return fail(&format!("cannot write {}: {err}", path.display()));
        }
        eprintln!("wrote {}", path.display());
    }
    ExitCode::SUCCESS
}

fn fail(message: &str) -> ExitCode {
    eprintln!("crdgen: {message}\n{USAGE}");
    ExitCode::FAILURE
}
