"""boto3's bedrock-runtime client against the gateway (run by boto3_test.go).

Environment: GW_URL (the gateway), AWS_BEARER_TOKEN_BEDROCK (the team
key), AWS_CA_BUNDLE (the gateway's test certificate), MODEL_ID. Prints one
JSON object with what each call returned, or {"skip": reason}.
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

out = {"botocore": botocore.__version__}
client = boto3.client(
    "bedrock-runtime",
    region_name="us-east-1",
    endpoint_url=os.environ["GW_URL"],
    config=botocore.config.Config(retries={"max_attempts": 1, "mode": "standard"}),
)
model = os.environ["MODEL_ID"]
messages = [{"role": "user", "content": [{"text": "Say hello"}]}]
try:
    r = client.converse(modelId=model, messages=messages, inferenceConfig={"maxTokens": 64})
except NoCredentialsError as e:
    print(json.dumps({"skip": "this botocore (%s) does not send AWS_BEARER_TOKEN_BEDROCK as a bearer token: %s" % (botocore.__version__, e)}))
    sys.exit(0)
out["converse"] = {"text": r["output"]["message"]["content"][0]["text"], "stopReason": r["stopReason"], "usage": r["usage"]}

r = client.converse_stream(modelId=model, messages=messages)
events, text = [], ""
for ev in r["stream"]:
    (name, body), = ev.items()
    events.append(name)
    if name == "contentBlockDelta":
        text += body["delta"]["text"]
out["converse_stream"] = {"events": events, "text": text}

body = json.dumps({"anthropic_version": "bedrock-2023-05-31", "max_tokens": 64,
                   "messages": [{"role": "user", "content": "Say hello"}]})
r = client.invoke_model(modelId=model, body=body)  # no contentType: boto3 sends no Content-Type
out["invoke_model"] = json.loads(r["body"].read())

r = client.invoke_model_with_response_stream(modelId=model, body=body)
chunks = [json.loads(ev["chunk"]["bytes"])["type"] for ev in r["body"] if "chunk" in ev]
out["invoke_model_with_response_stream"] = chunks

try:
    client.converse(modelId=model, messages=[{"role": "robot", "content": [{"text": "hi"}]}])
    out["validation"] = "no error"
except client.exceptions.ValidationException as e:
    out["validation"] = "ValidationException: " + e.response["Error"]["Message"]
except Exception as e:  # noqa: BLE001
    out["validation"] = "%s: %s" % (type(e).__name__, e)

try:
    client.converse(modelId="no-such-route", messages=messages)
    out["not_found"] = "no error"
except client.exceptions.ResourceNotFoundException as e:
    out["not_found"] = "ResourceNotFoundException"
except Exception as e:  # noqa: BLE001
    out["not_found"] = "%s: %s" % (type(e).__name__, e)

# A stream cut after its first token: botocore raises EventStreamError with
# the exception frame's type as the code, as it does for Bedrock's.
cut = boto3.client("bedrock-runtime", region_name="us-east-1", endpoint_url=os.environ["GW_CUT_URL"],
                   config=botocore.config.Config(retries={"max_attempts": 1}))
text = ""
try:
    for ev in cut.converse_stream(modelId=model, messages=messages)["stream"]:
        if "contentBlockDelta" in ev:
            text += ev["contentBlockDelta"]["delta"]["text"]
        if "messageStop" in ev:
            text += "<messageStop>"
    out["cut"] = {"text": text, "error": "none"}
except botocore.exceptions.EventStreamError as e:
    out["cut"] = {"text": text, "error": e.response["Error"]["Code"]}

print(json.dumps(out))
