"""moto's server, with one EC2 lookup made proportional to the resource instead of the region.

moto 5.2.5 answers "the tags of resource X" (every `tag:` filter on every resource, and every
resource it renders) by scanning every tag of every resource in the region through regular
expressions: a DescribeInstances page over 5,000 tagged instances takes 60-75 s, so the drift
benchmark (aws/tests/sweep_bench.rs) could not run at that size. This launcher replaces that one
method with a direct read of moto's own tag table. The answer is the same: the resource-id
filter moto used is `fnmatch.translate` of the id, an anchored exact match (ids hold no
wildcards), and the result keeps moto's order and shape. Nothing else in moto changes.

It also loads capacity_reservations.py (next to this file): EC2 Capacity Reservations, which
moto lacks, with the launch side (consumed and refused slots) as EC2 documents it.

Usage: python aws/ci/moto_server.py [moto_server's arguments]   (aws/ci/moto-server.sh)
"""

import os
import sys

from moto.ec2.models.core import TaggedEC2Resource
from moto.ec2.utils import EC2_PREFIX_TO_RESOURCE, get_prefix
from moto.server import main


def _tags_of_this_resource(self):
    resource_id = getattr(self, "id", None)
    if not resource_id:
        return []
    # `.get`, not `[...]`: moto's table is a defaultdict, and a read must not add a row.
    tags = self.ec2_backend.tags.get(resource_id) or {}
    resource_type = EC2_PREFIX_TO_RESOURCE.get(get_prefix(resource_id), "")
    return [
        {"resource_id": resource_id, "key": k, "value": v, "resource_type": resource_type}
        for k, v in list(tags.items())
    ]


TaggedEC2Resource.get_tags = _tags_of_this_resource

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import capacity_reservations  # noqa: E402,F401  (patches moto's EC2 on import)

if __name__ == "__main__":
    sys.argv[0] = "moto_server"
    sys.exit(main())
