"""Shared fixtures of the REST Proxy conformance suite.

REST_PROXY_URL is the proxy under test (kafko, or Confluent's REST Proxy in front of
Kafka). KAFKO_URL, when set, is the same server's kafko base URL: the tests that
cross-check against kafko's own /v1 API need it and are skipped without it.
"""

import os
import uuid

import pytest
import requests

V2 = "application/vnd.kafka.v2+json"
BINARY = "application/vnd.kafka.binary.v2+json"
JSON = "application/vnd.kafka.json.v2+json"


def env_url(name, missing):
    """The base URL in environment variable `name`, without a trailing slash;
    `missing(message)` (pytest.fail or pytest.skip) when it is not set."""
    url = os.environ.get(name)
    if not url:
        missing(f"{name} not set")
    return url.rstrip("/")


@pytest.fixture(scope="session")
def base():
    # The REST Proxy's base URL, e.g. http://localhost:8082.
    return env_url("REST_PROXY_URL", pytest.fail)


@pytest.fixture(scope="session")
def kafko():
    # /v1 cross-checks need a kafko server; skipped without one.
    return env_url("KAFKO_URL", pytest.skip)


@pytest.fixture(scope="session")
def http():
    with requests.Session() as s:
        yield s


@pytest.fixture(scope="session")
def cluster(base, http):
    r = http.get(f"{base}/v3/clusters", timeout=10)
    r.raise_for_status()
    return r.json()["data"][0]["cluster_id"]


def unique(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def create_topic(base, http, cluster, partitions=1):
    """A new topic (v3 create, so the suite runs against any proxy)."""
    name = unique("conf")
    r = http.post(
        f"{base}/v3/clusters/{cluster}/topics",
        json={"topic_name": name, "partitions_count": partitions, "replication_factor": 1},
        timeout=30,
    )
    assert r.status_code == 201, r.text
    return name


@pytest.fixture
def topic(base, http, cluster):
    return create_topic(base, http, cluster, partitions=3)


def assert_error(r, status, code, media=V2):
    """The proxy's error shape: status, content type, {error_code, message}."""
    assert r.status_code == status, (r.status_code, r.text)
    assert r.headers["content-type"].split(";")[0] == media, r.headers["content-type"]
    body = r.json()
    assert body["error_code"] == code, body
    assert isinstance(body["message"], str) and body["message"], body
    return body
