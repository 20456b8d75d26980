"""Deploys deploy/aws/adze.yaml into moto's CloudFormation and checks what it made: the
interruption queue, the four EventBridge rules aimed at it, the node and controller roles (IRSA
trust) and the controller policy. First, in the same account, a stand-in for Karpenter's
getting-started stack for the same cluster (KARPENTER_STAND_IN: the names that stack gives its
node role, instance profile, controller policies and queue, written here), as during a
migration: both must deploy, and no name either stack sets may be the other's (moto hands back
an existing SQS queue for a repeated name instead of failing, so the names are compared too). moto skips AWS::SQS::QueuePolicy and a role's
ManagedPolicyArns, and has no AWS::EKS::PodIdentityAssociation: the queue policy, the
attachment and the Pod Identity trust are checked statically (aws/tests/iam_policy.rs).
Run with moto's Python (boto3, PyYAML) and ADZE_AWS_ENDPOINT set (aws/ci/moto-server.sh).
Usage: moto_stack.py TEMPLATE
"""

import json
import os
import sys

import boto3
import yaml

CLUSTER = "ci"
OIDC = "oidc.eks.us-east-1.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE"
# A role a migrated EC2NodeClass keeps, passed to the stack's ExtraNodeRoleArns.
KARPENTER_NODE_ROLE_ARN = f"arn:aws:iam::123456789012:role/KarpenterNodeRole-{CLUSTER}"

# The resources Karpenter's getting-started CloudFormation names explicitly, by the names it
# gives them (its v0.3x-v1 templates: node role and, in older ones, instance profile
# "KarpenterNodeInstanceProfile-<cluster>"; controller policy "KarpenterControllerPolicy-<cluster>";
# the interruption queue named after the cluster; its four EventBridge rules are unnamed). The
# controller role comes from eksctl in Karpenter's guide; its name is here too.
KARPENTER_STAND_IN = {
    "AWSTemplateFormatVersion": "2010-09-09",
    "Parameters": {"ClusterName": {"Type": "String"}},
    "Resources": {
        "NodeRole": {"Type": "AWS::IAM::Role", "Properties": {
            "RoleName": {"Fn::Sub": "KarpenterNodeRole-${ClusterName}"},
            "AssumeRolePolicyDocument": {"Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"},
                "Action": "sts:AssumeRole"}]}}},
        "NodeProfile": {"Type": "AWS::IAM::InstanceProfile", "Properties": {
            "InstanceProfileName": {"Fn::Sub": "KarpenterNodeInstanceProfile-${ClusterName}"},
            "Roles": [{"Ref": "NodeRole"}]}},
        "ControllerPolicy": {"Type": "AWS::IAM::ManagedPolicy", "Properties": {
            "ManagedPolicyName": {"Fn::Sub": "KarpenterControllerPolicy-${ClusterName}"},
            "PolicyDocument": {"Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Action": "ec2:DescribeInstances", "Resource": "*"}]}}},
        "ControllerRole": {"Type": "AWS::IAM::Role", "Properties": {
            "RoleName": {"Fn::Sub": "KarpenterControllerRole-${ClusterName}"},
            "AssumeRolePolicyDocument": {"Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Principal": {"Service": "pods.eks.amazonaws.com"},
                "Action": "sts:AssumeRole"}]}}},
        "Queue": {"Type": "AWS::SQS::Queue", "Properties": {
            "QueueName": {"Ref": "ClusterName"}, "MessageRetentionPeriod": 300}},
        **{rule: {"Type": "AWS::Events::Rule", "Properties": {
            "EventPattern": {"source": [source], "detail-type": [detail]},
            "Targets": [{"Id": "KarpenterInterruptionQueueTarget", "Arn": {"Fn::GetAtt": ["Queue", "Arn"]}}]}}
           for rule, source, detail in [
               ("ScheduledChangeRule", "aws.health", "AWS Health Event"),
               ("SpotInterruptionRule", "aws.ec2", "EC2 Spot Instance Interruption Warning"),
               ("RebalanceRule", "aws.ec2", "EC2 Instance Rebalance Recommendation"),
               ("InstanceStateChangeRule", "aws.ec2", "EC2 Instance State-change Notification")]},
    },
}

# Resource types whose physical id is the name the template gives (or CloudFormation makes up).
NAMED = {"AWS::IAM::Role", "AWS::IAM::InstanceProfile", "AWS::IAM::ManagedPolicy", "AWS::SQS::Queue",
         "AWS::Events::Rule"}


def named_resources(cf, stack):
    """(type, name) of every named resource the stack made. A queue's physical id is its URL."""
    out = set()
    for r in cf.describe_stack_resources(StackName=stack)["StackResources"]:
        if r.get("ResourceType") in NAMED:
            pid = r["PhysicalResourceId"]
            if r["ResourceType"] == "AWS::SQS::Queue":
                pid = pid.rstrip("/").rsplit("/", 1)[-1]
            elif pid.startswith("arn:"):
                pid = pid.rsplit("/", 1)[-1]
            out.add((r["ResourceType"], pid))
    return out


def for_moto(template):
    """moto's AWS::IAM::ManagedPolicy JSON-encodes a string PolicyDocument a second time (real
    CloudFormation takes the string as the document), so hand moto the object the string stands
    for: the cluster name put into the keys, every other ${...} left to Fn::Sub."""
    policy = template["Resources"]["ControllerPolicy"]["Properties"]
    text = policy["PolicyDocument"]["Fn::Sub"].replace("${ClusterName}", CLUSTER)

    def sub(v):
        if isinstance(v, str):
            return {"Fn::Sub": v} if "${" in v else v
        if isinstance(v, list):
            return [sub(x) for x in v]
        if isinstance(v, dict):
            return {k: sub(x) for k, x in v.items()}
        return v

    policy["PolicyDocument"] = sub(json.loads(text))
    return template


def main():
    endpoint = os.environ["ADZE_AWS_ENDPOINT"]
    with open(sys.argv[1]) as f:
        template = for_moto(yaml.safe_load(f))
    client = lambda s: boto3.client(s, endpoint_url=endpoint)
    cf, sqs, events, iam = client("cloudformation"), client("sqs"), client("events"), client("iam")
    cf.create_stack(StackName="karpenter-ci", TemplateBody=json.dumps(KARPENTER_STAND_IN),
                    Capabilities=["CAPABILITY_NAMED_IAM"],
                    Parameters=[{"ParameterKey": "ClusterName", "ParameterValue": CLUSTER}])
    karpenter = cf.describe_stacks(StackName="karpenter-ci")["Stacks"][0]
    assert karpenter["StackStatus"] == "CREATE_COMPLETE", karpenter
    cf.create_stack(
        StackName="adze-ci",
        TemplateBody=json.dumps(template),
        Capabilities=["CAPABILITY_NAMED_IAM"],
        Parameters=[
            {"ParameterKey": "ClusterName", "ParameterValue": CLUSTER},
            {"ParameterKey": "ControllerTrust", "ParameterValue": "irsa"},
            {"ParameterKey": "OidcProvider", "ParameterValue": OIDC},
            {"ParameterKey": "NodeAccessEntry", "ParameterValue": "false"},
            {"ParameterKey": "ExtraNodeRoleArns", "ParameterValue": KARPENTER_NODE_ROLE_ARN},
        ],
    )
    stack = cf.describe_stacks(StackName="adze-ci")["Stacks"][0]
    assert stack["StackStatus"] == "CREATE_COMPLETE", stack
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}

    # Beside Karpenter's stack for the same cluster: no name in common.
    ours, theirs = named_resources(cf, "adze-ci"), named_resources(cf, "karpenter-ci")
    assert len(theirs) == 9 and len(ours) >= 9, (ours, theirs)
    assert not ours & theirs, f"resources of one type and name in both stacks: {ours & theirs}"
    # The comparison sees a collision: Karpenter's queue under the name Adze's stack had before.
    assert ("AWS::SQS::Queue", CLUSTER) in theirs, theirs

    queue = outputs["InterruptionQueueName"]
    assert queue == f"adze-{CLUSTER}", outputs
    url = sqs.get_queue_url(QueueName=queue)["QueueUrl"]
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    arn = attrs["QueueArn"]
    assert attrs["MessageRetentionPeriod"] == "300", attrs
    karpenter_queue = sqs.get_queue_url(QueueName=CLUSTER)["QueueUrl"]
    assert karpenter_queue != url, (karpenter_queue, url)

    wanted = {
        ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
        ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
        ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
        ("aws.ec2", "EC2 Instance State-change Notification"),
        ("aws.health", "AWS Health Event"),
    }
    seen = set()
    for rule in events.list_rules()["Rules"]:
        pattern = json.loads(rule["EventPattern"])
        targets = events.list_targets_by_rule(Rule=rule["Name"])["Targets"]
        if [t["Arn"] for t in targets] == [arn]:
            seen |= {(s, d) for s in pattern["source"] for d in pattern["detail-type"]}
    assert seen == wanted, f"rules aimed at the queue: {seen}"
    # Karpenter's four rules still aim at its own queue.
    its_arn = sqs.get_queue_attributes(QueueUrl=karpenter_queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    theirs_aimed = [r for r in events.list_rules()["Rules"]
                    if [t["Arn"] for t in events.list_targets_by_rule(Rule=r["Name"])["Targets"]] == [its_arn]]
    assert len(theirs_aimed) == 4, theirs_aimed

    node = iam.get_role(RoleName=f"AdzeNode-{CLUSTER}")["Role"]
    assert outputs["NodeRoleName"] == node["RoleName"], outputs
    profile = iam.get_instance_profile(InstanceProfileName=outputs["NodeInstanceProfileName"])
    assert [r["RoleName"] for r in profile["InstanceProfile"]["Roles"]] == [node["RoleName"]]

    controller = iam.get_role(RoleName=f"AdzeController-{CLUSTER}")["Role"]
    assert outputs["ControllerRoleArn"] == controller["Arn"], outputs
    trust = controller["AssumeRolePolicyDocument"]
    if isinstance(trust, str):
        trust = json.loads(trust)
    cond = trust["Statement"][0]["Condition"]["StringEquals"]
    assert cond == {
        f"{OIDC}:sub": "system:serviceaccount:adze-system:adze-provisioner",
        f"{OIDC}:aud": "sts.amazonaws.com",
    }, trust
    # moto's AWS::IAM::Role ignores ManagedPolicyArns: find the policy by name.
    [policy_arn] = [
        p["Arn"]
        for p in iam.list_policies(Scope="Local")["Policies"]
        if p["PolicyName"] == f"AdzeController-{CLUSTER}"
    ]
    version = iam.get_policy(PolicyArn=policy_arn)["Policy"]["DefaultVersionId"]
    document = iam.get_policy_version(PolicyArn=policy_arn, VersionId=version)["PolicyVersion"]
    document = document["Document"]
    if isinstance(document, str):
        document = json.loads(document)
    by_sid = {s["Sid"]: s for s in document["Statement"]}
    assert by_sid["Interruptions"]["Resource"] == arn, by_sid["Interruptions"]
    assert by_sid["PassNodeRole"]["Resource"] == node["Arn"], by_sid["PassNodeRole"]
    assert "ec2:CreateAction" in by_sid["TagOnCreate"]["Condition"]["StringEquals"]
    # Fn::Sub put the stack's region into every regional statement's condition.
    region = arn.split(":")[3]
    for sid in ("Discover", "TerminateOwnedInstances", "Images", "ClusterSettings", "Interruptions"):
        got = by_sid[sid]["Condition"]["StringEquals"]["aws:RequestedRegion"]
        assert got == region, (sid, got, region)
    assert by_sid["TerminateOwnedInstances"]["Condition"]["Null"] == {
        "aws:ResourceTag/adze.sh/nodepool": "false",
        "aws:ResourceTag/adze.sh/nodeclaim": "false",
    }, by_sid["TerminateOwnedInstances"]
    # ExtraNodeRoleArns: PassRole on Karpenter's node role too, to EC2 only, in a policy of its own.
    inline = iam.get_role_policy(RoleName=controller["RoleName"], PolicyName="AdzePassExtraNodeRoles")
    extra = inline["PolicyDocument"]
    if isinstance(extra, str):
        extra = json.loads(extra)
    [statement] = extra["Statement"]
    resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
    assert statement["Action"] == "iam:PassRole" and resources == [KARPENTER_NODE_ROLE_ARN], statement
    assert statement["Condition"] == {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}}, statement
    # Defaults for the two parameters, another cluster: no extra policy; a queue name given.
    cf.create_stack(
        StackName="adze-ci2", TemplateBody=json.dumps(template), Capabilities=["CAPABILITY_NAMED_IAM"],
        Parameters=[
            {"ParameterKey": "ClusterName", "ParameterValue": "ci2"},
            {"ParameterKey": "OidcProvider", "ParameterValue": OIDC},
            {"ParameterKey": "NodeAccessEntry", "ParameterValue": "false"},
            {"ParameterKey": "InterruptionQueueName", "ParameterValue": "ci2-interruptions"},
        ],
    )
    second = cf.describe_stacks(StackName="adze-ci2")["Stacks"][0]
    assert second["StackStatus"] == "CREATE_COMPLETE", second
    assert {o["OutputKey"]: o["OutputValue"] for o in second["Outputs"]}["InterruptionQueueName"] == "ci2-interruptions"
    sqs.get_queue_url(QueueName="ci2-interruptions")
    assert iam.list_role_policies(RoleName="AdzeController-ci2")["PolicyNames"] == [], "no ExtraNodeRoleArns, no policy"
    print(f"moto_stack.py: stack adze-ci: queue, {len(seen)} rules, roles and policy as declared; "
          f"beside karpenter-ci with no name in common ({len(ours)} and {len(theirs)} named resources)")


if __name__ == "__main__":
    main()
