#!/usr/bin/env python3
"""Plays the kubelets of e2e/aws.sh: moto launches instances but nothing boots on them.

Every 0.5 s, each running moto instance of the cluster boots as a real one would
(e2e/emulation/nodejoin.py): its user data is read as nodeadm (AL2023) or Bottlerocket reads
it, by the image it runs, and refused where they refuse (missing cidr, CA or endpoint,
unknown fields, labels kubelet rejects, a CA or endpoint that is not this cluster's). A refused
instance gets no Node and a line `REFUSED <id> (<family>): <reason>` in the log. Otherwise a
Node registers as kubelet registers it: providerID aws:///ZONE/ID, the well-known labels of
the *instance* (its real type, zone and arch, from EC2, never the NodeClaim's), the labels
and taints of the user data, capacity and allocatable from the instance type and the kubelet
settings (e2e/emulation/nodejoin.py node_resources), Ready. A pod bound to one of those Nodes
is moved to Running/Ready; a terminating one is deleted (grace 0), as the kubelet does once
its containers stopped. A Node is registered once per instance: if Adze deletes it later, it
stays deleted (a real node's kubelet stops with its instance).

Environment: APISERVER, ADZE_TOKEN, ADZE_CA_CERT (from the harness env file), MOTO_URL,
CLUSTER_NAME, BOTTLEROCKET_IMAGES (comma-separated image ids that boot Bottlerocket; others
boot AL2023). Runs with the moto venv's python (boto3, requests and PyYAML come with moto).
"""
import base64
import datetime
import os
import sys
import time

import boto3
import requests

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "emulation"))
import nodejoin  # noqa: E402

api = os.environ["APISERVER"].rstrip("/")
cluster = os.environ["CLUSTER_NAME"]
with open(os.environ["ADZE_CA_CERT"]) as f:
    cluster_facts = {"endpoint": api, "ca_pem": f.read()}
bottlerocket_images = set(filter(None, os.environ.get("BOTTLEROCKET_IMAGES", "").split(",")))
http = requests.Session()
http.trust_env = False  # REQUESTS_CA_BUNDLE and proxies of the environment must not apply
http.headers["Authorization"] = "Bearer " + os.environ["ADZE_TOKEN"]
http.verify = os.environ["ADZE_CA_CERT"]
ec2 = boto3.client(
    "ec2",
    endpoint_url=os.environ["MOTO_URL"],
    region_name=os.environ.get("AWS_REGION", "us-east-1"),
    aws_access_key_id="testing",
    aws_secret_access_key="testing",
)
handled = {}  # instance id -> node name, or None when it could not join
ours = set()  # node names this registrar created
type_facts = {}  # instance type -> (vcpus, memory MiB, arch)


def log(msg):
    print(time.strftime("%H:%M:%S"), msg, flush=True)


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def merge_patch(path, body):
    r = http.patch(api + path, json=body, headers={"Content-Type": "application/merge-patch+json"})
    r.raise_for_status()
    return r.json()


def instances():
    out = []
    pages = ec2.get_paginator("describe_instances").paginate(
        Filters=[
            {"Name": f"tag:kubernetes.io/cluster/{cluster}", "Values": ["owned"]},
            {"Name": "instance-state-name", "Values": ["running"]},
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


def register(inst):
    iid = inst["InstanceId"]
    family = "bottlerocket" if inst.get("ImageId") in bottlerocket_images else "al2023"
    try:
        join = nodejoin.join(family, user_data(iid), cluster_facts)
    except nodejoin.Refused as e:
        handled[iid] = None
        if "no user data" in str(e):
            log(f"instance {iid} has no user data: nothing on it knows the cluster, no Node")
        else:
            log(f"REFUSED {iid} ({family}): {e}")
        return
    zone = inst["Placement"]["AvailabilityZone"]
    name = inst.get("PrivateDnsName") or iid
    vcpus, mib, arch = facts(inst["InstanceType"])
    capacity, allocatable = nodejoin.node_resources(vcpus, mib, root_gib(inst), join)
    labels = dict(join.labels)
    labels.update({
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": arch,
        "node.kubernetes.io/instance-type": inst["InstanceType"],
        "topology.kubernetes.io/zone": zone,
        "topology.kubernetes.io/region": zone[:-1],
    })
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"providerID": f"aws:///{zone}/{iid}", "taints": join.taints},
    }
    r = http.post(api + "/api/v1/nodes", json=node)
    if r.status_code != 409:
        r.raise_for_status()
    t = now()
    merge_patch(
        f"/api/v1/nodes/{name}/status",
        {
            "status": {
                "capacity": capacity,
                "allocatable": allocatable,
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "KubeletReady",
                        "message": "registered by e2e/aws-registrar.py",
                        "lastHeartbeatTime": t,
                        "lastTransitionTime": t,
                    }
                ],
                "addresses": [{"type": "InternalIP", "address": inst.get("PrivateIpAddress", "10.0.0.1")}],
                "nodeInfo": {
                    "architecture": arch,
                    "operatingSystem": "linux",
                    "kubeletVersion": "v1.20.2",
                    "kubeProxyVersion": "v1.20.2",
                    "osImage": "Bottlerocket (moto)" if family == "bottlerocket" else "Amazon Linux 2023 (moto)",
                    "kernelVersion": "",
                    "containerRuntimeVersion": "",
                    "bootID": iid,
                    "machineID": iid,
                    "systemUUID": iid,
                },
            }
        },
    )
    # TaintNodesByCondition put node.kubernetes.io/not-ready on the new Node; a Ready kubelet
    # sees it lifted by the node lifecycle controller, which the harness does not run.
    for _ in range(5):
        cur = http.get(f"{api}/api/v1/nodes/{name}").json()
        taints = (cur.get("spec") or {}).get("taints") or []
        kept = [t for t in taints if t["key"] != "node.kubernetes.io/not-ready"]
        if kept == taints:
            break
        r = http.patch(
            f"{api}/api/v1/nodes/{name}",
            json={"metadata": {"resourceVersion": cur["metadata"]["resourceVersion"]}, "spec": {"taints": kept}},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        if r.status_code != 409:
            r.raise_for_status()
            break
    handled[iid] = name
    ours.add(name)
    log(f"JOINED {iid} ({family}) as node {name}: {inst['InstanceType']} {arch} in {zone}, "
        f"allocatable cpu {allocatable['cpu']} memory {allocatable['memory']} pods {allocatable['pods']}")


def ready(pod):
    st = pod.get("status") or {}
    return st.get("phase") == "Running" and any(
        c["type"] == "Ready" and c["status"] == "True" for c in st.get("conditions") or []
    )


def pods():
    r = http.get(api + "/api/v1/pods")
    r.raise_for_status()
    for pod in r.json()["items"]:
        node = (pod.get("spec") or {}).get("nodeName")
        if node not in ours:
            continue
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        if pod["metadata"].get("deletionTimestamp"):
            r = http.delete(
                f"{api}/api/v1/namespaces/{ns}/pods/{name}",
                json={"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0},
            )
            if r.status_code not in (200, 404, 409):
                r.raise_for_status()
            continue
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed") or ready(pod):
            continue
        t = now()
        cond = lambda ty: {"type": ty, "status": "True", "lastTransitionTime": t}
        merge_patch(
            f"/api/v1/namespaces/{ns}/pods/{name}/status",
            {
                "status": {
                    "phase": "Running",
                    "startTime": t,
                    "hostIP": "10.0.0.1",
                    "podIP": "10.0.0.2",
                    "conditions": [cond("Initialized"), cond("Ready"), cond("ContainersReady"), cond("PodScheduled")],
                }
            },
        )


def main():
    log(f"registrar for cluster {cluster}: moto {os.environ['MOTO_URL']}, apiserver {api}")
    while True:
        try:
            for inst in instances():
                if inst["InstanceId"] not in handled:
                    register(inst)
            pods()
        except Exception as e:  # keep playing the kubelets; the suite's checks catch real trouble
            log(f"round failed: {e!r}")
        time.sleep(0.5)


if __name__ == "__main__":
    sys.exit(main())
