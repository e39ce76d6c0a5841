"""S3 GetObject with botocore, path-style against BASE: bucket "item", key K,
so GET /item/K.  MODE: off (total_max_attempts 1: botocore's retries off, the
client the peers bench runs under `backoff --`), standard or adaptive
(max_attempts 10, as boto3's retry guide shows).  Dummy credentials, given
here: no credential chain, no instance metadata, no file under ~/.aws read.
Usage: botocore_s3.py BASE FIRST COUNT MODE"""
import os
import sys

os.environ["AWS_CONFIG_FILE"] = "/dev/null"
os.environ["AWS_SHARED_CREDENTIALS_FILE"] = "/dev/null"
os.environ["AWS_EC2_METADATA_DISABLED"] = "true"

import botocore.session  # noqa: E402
from botocore.config import Config  # noqa: E402

from peer_common import args, run  # noqa: E402

base, first, count, rest = args("botocore_s3.py BASE FIRST COUNT off|standard|adaptive")
mode = rest[0] if rest else ""
if mode == "off":
    retries = {"mode": "standard", "total_max_attempts": 1}
elif mode in ("standard", "adaptive"):
    retries = {"mode": mode, "max_attempts": 10}
else:
    sys.stderr.write("botocore_s3.py: MODE \"%s\" is not valid: expected off, standard or adaptive\n"
                     % mode)
    sys.exit(2)
client = botocore.session.get_session().create_client(
    "s3", region_name="us-east-1", endpoint_url=base,
    aws_access_key_id="AKIDPEERSBENCH", aws_secret_access_key="peers-bench-secret",
    config=Config(retries=retries, s3={"addressing_style": "path"}))


def fetch(url, k):
    r = client.get_object(Bucket="item", Key=str(k))  # ClientError once it gives up
    return r["Body"].read().decode()


run(fetch, base, first, count)
