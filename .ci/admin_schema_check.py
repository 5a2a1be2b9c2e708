#!/usr/bin/env python3
"""Every JSON answer of a live management API matches its response schema
in crates/troupe-admin/openapi.yaml (issue 41).

Usage: admin_schema_check.py BASE_URL OTHER_NODE  (token in
TROUPE_ADMIN_TOKEN). It asks every GET route of the document that
answers JSON, then the actions (drain and undrain OTHER_NODE, pause and
resume, passivate an entity that does not run, mark this node itself
down) and a few refusals (no token, bad query, unknown route). Each
answer's status must be documented for its route with an
application/json schema (refusals without one: the Error schema), and
the body must validate against it (OpenAPI 3.0 `nullable` read as JSON
Schema's null type; `$ref`s into components resolved). Exits 1 on the
first route that does not match, naming it.
"""
import copy
import json
import os
import sys
import urllib.error
import urllib.request

import jsonschema
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
DOC = os.path.join(HERE, "..", "crates", "troupe-admin", "openapi.yaml")
NOT_JSON = {"/api/v1/openapi.yaml", "/", "/dashboard/app.js", "/dashboard/style.css"}


def nullable(node):
    """OpenAPI 3.0 `nullable: true` -> JSON Schema, recursively."""
    if isinstance(node, list):
        return [nullable(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: nullable(v) for k, v in node.items() if k != "nullable"}
    if node.get("nullable"):
        if "type" in out and isinstance(out["type"], str):
            out["type"] = [out["type"], "null"]
            if "enum" in out:
                out["enum"] = out["enum"] + [None]
        else:
            out = {"anyOf": [{"type": "null"}, out]}
    return out


def main():
    base, other = sys.argv[1].rstrip("/"), sys.argv[2]
    token = os.environ["TROUPE_ADMIN_TOKEN"]
    doc = yaml.safe_load(open(DOC))
    components = nullable(doc["components"])

    def schema_for(method, path, status):
        op = doc["paths"].get(path, {}).get(method.lower())
        if op is None:
            return None
        resp = op.get("responses", {}).get(str(status))
        if resp is None:
            return None
        if "$ref" in resp:
            resp = doc["components"]["responses"][resp["$ref"].split("/")[-1]]
        s = resp.get("content", {}).get("application/json", {}).get("schema")
        if s is None:
            return None
        root = nullable(copy.deepcopy(s))
        root = {"allOf": [root], "components": components}
        return root

    def call(method, path, body=None, headers=None):
        h = {"Authorization": "Bearer " + token}
        if headers is not None:
            h = headers
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            h = dict(h, **{"Content-Type": "application/json", "X-Troupe-Csrf": csrf})
        req = urllib.request.Request(base + path, data=data, method=method, headers=h)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    failures = []
    checked = 0

    def check(method, route, path=None, body=None, headers=None, expect=None):
        nonlocal checked
        status, raw = call(method, path or route, body, headers)
        if expect is not None and status != expect:
            failures.append(f"{method} {path or route}: status {status}, expected {expect}: {raw[:200]!r}")
            return
        try:
            value = json.loads(raw)
        except ValueError:
            failures.append(f"{method} {path or route}: {status}, not JSON: {raw[:200]!r}")
            return
        schema = schema_for(method, route, status)
        if schema is None and status >= 400:
            schema = {"allOf": [{"$ref": "#/components/schemas/Error"}], "components": components}
        if schema is None:
            failures.append(f"{method} {route}: status {status} has no application/json schema in openapi.yaml")
            return
        try:
            jsonschema.validate(value, schema, cls=jsonschema.Draft202012Validator)
        except jsonschema.ValidationError as e:
            where = "/".join(str(p) for p in e.absolute_path)
            failures.append(f"{method} {route} ({status}): at /{where}: {e.message}")
            return
        checked += 1

    csrf = json.loads(call("GET", "/api/v1/csrf")[1])["token"]
    gets = [p for p, ops in doc["paths"].items() if "get" in ops and p not in NOT_JSON]
    for p in gets:
        check("GET", p)
    check("GET", "/api/v1/actors", "/api/v1/actors?top=3")
    check("POST", "/api/v1/actions/drain", body={"node": other}, expect=200)
    check("POST", "/api/v1/actions/undrain", body={"node": other}, expect=200)
    check("POST", "/api/v1/actions/rebalancing/pause", body={}, expect=200)
    check("POST", "/api/v1/actions/rebalancing/resume", body={}, expect=200)
    check("POST", "/api/v1/actions/passivate", body={"kind": "thing", "id": "no-such-entity"}, expect=404)
    me = json.loads(call("GET", "/api/v1/node")[1])["node"]["name"]
    check("POST", "/api/v1/actions/down", body={"node": me}, expect=409)
    check("POST", "/api/v1/actions/drain", body={"node": "bad name"}, expect=400)
    # Refusals: the Error schema.
    check("GET", "/api/v1/node", headers={}, expect=401)
    check("GET", "/api/v1/actors", "/api/v1/actors?top=x", expect=400)
    check("GET", "/api/v1/nothing-here", expect=404)
    if failures:
        print("openapi.yaml does not match the live answers:", file=sys.stderr)
        for f in failures:
            print("  " + f, file=sys.stderr)
        sys.exit(1)
    print(f"admin schema check: {checked} answers match openapi.yaml ({len(gets)} GET routes, actions, refusals)")


if __name__ == "__main__":
    main()
