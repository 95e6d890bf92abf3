"""boto3 Converse and ConverseStream through the gateway to a Bedrock
target (run by boto3_test.go): records the body botocore sent the
gateway for each call (a before-send hook) and what the calls returned.

Environment: as boto3_check.py. Prints one JSON object, or {"skip": reason}.
"""
import json
import os
import sys

try:
    import boto3
    import botocore
    from botocore.exceptions import NoCredentialsError
except ImportError as e:  # pragma: no cover
    print(json.dumps({"skip": "boto3 is not installed: %s" % e}))
    sys.exit(0)

sent = []


def record(request, **_):
    body = request.body
    sent.append(body.decode() if isinstance(body, bytes) else body)


client = boto3.client(
    "bedrock-runtime",
    region_name="us-east-1",
    endpoint_url=os.environ["GW_URL"],
    config=botocore.config.Config(retries={"max_attempts": 1, "mode": "standard"}),
)
client.meta.events.register("before-send.bedrock-runtime.*", record)
args = dict(
    modelId=os.environ["MODEL_ID"],
    messages=[{"role": "user", "content": [{"text": "Say hello"}]}],
    additionalModelRequestFields={"top_k": 7},
    performanceConfig={"latency": "optimized"},
    requestMetadata={"project": "alpha"},
)
out = {}
try:
    r = client.converse(**args)
except NoCredentialsError as e:
    print(json.dumps({"skip": "this botocore (%s) does not send AWS_BEARER_TOKEN_BEDROCK as a bearer token: %s" % (botocore.__version__, e)}))
    sys.exit(0)
out["converse"] = {"text": r["output"]["message"]["content"][0]["text"], "latency": r["metrics"]["latencyMs"],
                   "performance": r.get("performanceConfig", {}).get("latency", "")}
r = client.converse_stream(**args)
text, latency = "", 0
for ev in r["stream"]:
    if "contentBlockDelta" in ev:
        text += ev["contentBlockDelta"]["delta"]["text"]
    if "metadata" in ev:
        latency = ev["metadata"]["metrics"]["latencyMs"]
out["converse_stream"] = {"text": text, "latency": latency}
out["sent"] = sent
print(json.dumps(out))
