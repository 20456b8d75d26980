#!/usr/bin/env python3
"""Plays the nodes of e2e/aws.sh: moto launches instances but nothing boots on them.

Every 0.5 s, each running moto instance of the cluster boots as a real one would
(e2e/emulation/nodejoin.py): its user data is read as nodeadm (AL2023) or Bottlerocket reads
it, by the image it runs, and refused where they refuse (missing cidr, CA or endpoint,
unknown fields, labels kubelet rejects, a CA or endpoint that is not this cluster's). A refused
instance gets no kubelet and a line `REFUSED <id> (<family>): <reason>` in the log. Otherwise a
kubemark hollow kubelet (real kubelet code over a fake runtime, e2e/harness/hollow-node.sh)
starts for it, authenticating as system:node:NAME (NAME: the instance's private DNS name), so
the Node authorizer and NodeRestriction apply. It registers the Node itself: providerID
aws:///ZONE/ID, the labels and taints of the user data, capacity and allocatable computed by the
kubelet from the instance type (vCPUs, memory less the VM's share, the root volume) and the
user data's max-pods, kube-reserved, system-reserved and eviction-hard
(e2e/emulation/nodejoin.py kubelet_sizing). The well-known labels of the *instance* (its real
type, zone and region, from EC2, never the NodeClaim's) are passed as --node-labels: the
labels a kubelet with the AWS cloud provider sets on itself (on EKS the cloud controller
manager); kubernetes.io/hostname, os and arch the kubelet sets as always. A kubelet that
refuses to start (a label it may not set, a bad quantity) is logged as REFUSED too, with the
tail of its log. The kubelet runs the pods bound to it and reports their status; it is stopped
(SIGTERM, as a shutdown does) once its instance leaves `running`, so a terminated instance's Node
goes NotReady under the node lifecycle controller until Adze deletes it.

Environment: PLANE_DIR (the control-plane.sh directory: its CA signs the kubelets' certificates),
APISERVER, ADZE_CA_CERT (from the harness env file), MOTO_URL, CLUSTER_NAME, BOTTLEROCKET_IMAGES
(comma-separated image ids that boot Bottlerocket; others boot AL2023). Runs with the moto venv's
python (boto3 and PyYAML come with moto). Stops no kubelet when it exits: the suite's cleanup
stops them all.
"""
import base64
import os
import subprocess
import sys
import threading
import time

import boto3

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "emulation"))
import nodejoin  # noqa: E402

HOLLOW = os.path.join(here, "harness", "hollow-node.sh")
plane = os.environ["PLANE_DIR"]
api = os.environ["APISERVER"].rstrip("/")
cluster = os.environ["CLUSTER_NAME"]
with open(os.environ["ADZE_CA_CERT"]) as f:
    cluster_facts = {"endpoint": api, "ca_pem": f.read()}
bottlerocket_images = set(filter(None, os.environ.get("BOTTLEROCKET_IMAGES", "").split(",")))
ec2 = boto3.client(
    "ec2",
    endpoint_url=os.environ["MOTO_URL"],
    region_name=os.environ.get("AWS_REGION", "us-east-1"),
    aws_access_key_id="testing",
    aws_secret_access_key="testing",
)
handled = {}  # instance id -> node name, or None when it could not join
stopped = set()  # instance ids whose kubelet was stopped
type_facts = {}  # instance type -> (vcpus, memory MiB, arch)
lock = threading.Lock()


def log(msg):
    with lock:
        print(time.strftime("%H:%M:%S"), msg, flush=True)


def instances(states):
    out = []
    pages = ec2.get_paginator("describe_instances").paginate(
        Filters=[
            {"Name": f"tag:kubernetes.io/cluster/{cluster}", "Values": ["owned"]},
            {"Name": "instance-state-name", "Values": states},
        ]
    )
    for page in pages:
        for res in page["Reservations"]:
            out.extend(res["Instances"])
    return out


def facts(instance_type):
    if instance_type not in type_facts:
        t = ec2.describe_instance_types(InstanceTypes=[instance_type])["InstanceTypes"][0]
        archs = t["ProcessorInfo"]["SupportedArchitectures"]
        arch = "arm64" if "arm64" in archs else "amd64"
        type_facts[instance_type] = (t["VCpuInfo"]["DefaultVCpus"], t["MemoryInfo"]["SizeInMiB"], arch)
    return type_facts[instance_type]


def user_data(iid):
    v = ec2.describe_instance_attribute(InstanceId=iid, Attribute="userData").get("UserData") or {}
    v = v.get("Value") if isinstance(v, dict) else v
    if not v:
        return ""
    try:
        return base64.b64decode(v).decode()
    except Exception:
        return v


def root_gib(inst):
    """The root volume's size, as the node's filesystem would be; 20 GiB when EC2 says nothing."""
    root = inst.get("RootDeviceName")
    for m in inst.get("BlockDeviceMappings") or []:
        if m.get("DeviceName") == root and (m.get("Ebs") or {}).get("VolumeId"):
            vols = ec2.describe_volumes(VolumeIds=[m["Ebs"]["VolumeId"]])["Volumes"]
            if vols:
                return vols[0]["Size"]
    return 20


def boot(iid, name, family, args, summary):
    """hollow-node.sh start, in its own thread: it waits for the kubelet's port (seconds)."""
    t0 = time.time()
    r = subprocess.run([HOLLOW, "start", plane, name, *args], capture_output=True, text=True)
    if r.returncode != 0:
        tail = " | ".join((r.stderr or r.stdout).strip().splitlines()[-4:])
        log(f"REFUSED {iid} ({family}): the kubelet of {name} did not start: {tail}")
        return
    log(f"JOINED {iid} ({family}) as node {name}: {summary}; kubelet up in {time.time() - t0:.1f} s")


def register(inst):
    iid = inst["InstanceId"]
    family = "bottlerocket" if inst.get("ImageId") in bottlerocket_images else "al2023"
    try:
        join = nodejoin.join(family, user_data(iid), cluster_facts)
    except nodejoin.Refused as e:
        handled[iid] = None
        if "no user data" in str(e):
            log(f"instance {iid} has no user data: nothing on it knows the cluster, no kubelet")
        else:
            log(f"REFUSED {iid} ({family}): {e}")
        return
    zone = inst["Placement"]["AvailabilityZone"]
    name = inst.get("PrivateDnsName") or iid
    vcpus, mib, arch = facts(inst["InstanceType"])
    sizing = nodejoin.kubelet_sizing(vcpus, mib, root_gib(inst), join)
    _, allocatable = nodejoin.node_resources(vcpus, mib, root_gib(inst), join)
    labels = dict(join.labels)
    # What the kubelet's cloud provider (on EKS the cloud controller manager) says of the instance.
    labels.update({
        "node.kubernetes.io/instance-type": inst["InstanceType"],
        "topology.kubernetes.io/zone": zone,
        "topology.kubernetes.io/region": zone[:-1],
    })
    args = ["--provider-id", f"aws:///{zone}/{iid}",
            "--labels", ",".join(f"{k}={v}" for k, v in sorted(labels.items()))]
    if join.taints:
        args += ["--taints", ",".join(f"{t['key']}={t.get('value') or ''}:{t['effect']}" for t in join.taints)]
    for flag, value in sizing.items():
        if value:
            args += [flag, value]
    handled[iid] = name
    summary = (f"{inst['InstanceType']} {arch} in {zone}, expected allocatable cpu {allocatable['cpu']} "
               f"memory {allocatable['memory']} pods {allocatable['pods']}")
    log(f"BOOT {iid} ({family}) as node {name}: hollow-node.sh start {' '.join(args)}")
    threading.Thread(target=boot, args=(iid, name, family, args, summary), daemon=True).start()


def stop(iid, state):
    name = handled[iid]
    stopped.add(iid)
    r = subprocess.run([HOLLOW, "stop", plane, name], capture_output=True, text=True)
    out = (r.stdout or r.stderr).strip()
    if "not running" in out:  # it died before its instance ended: nothing here stops kubelets
        log(f"GONE {iid}: instance {state}, but the kubelet of {name} had already exited (see its kubelet.log)")
    else:
        log(f"STOPPED {iid}: instance {state}, kubelet of {name}: {out}")


def main():
    log(f"registrar for cluster {cluster}: moto {os.environ['MOTO_URL']}, apiserver {api}, kubelets under {plane}/hollow")
    while True:
        try:
            for inst in instances(["running"]):
                if inst["InstanceId"] not in handled:
                    register(inst)
            for inst in instances(["shutting-down", "terminated", "stopping", "stopped"]):
                iid = inst["InstanceId"]
                if handled.get(iid) and iid not in stopped:
                    stop(iid, inst["State"]["Name"])
        except Exception as e:  # keep playing the nodes; the suite's checks catch real trouble
            log(f"round failed: {e!r}")
        time.sleep(0.5)


if __name__ == "__main__":
    sys.exit(main())
