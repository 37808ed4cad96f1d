"""Plain S3 requests, signed with AWS Signature Version 4, for what pyarrow cannot do.

pyarrow's ``S3FileSystem.delete_file`` deletes the object and then writes an empty
"directory marker" object (``folder/``) for its parent, so that the folder still "exists"
(apache/arrow#36275; pyarrow has no option to turn that off). Iceberg tables have no use for
folders, and every delete would leave such an object behind, so lakecat deletes S3 objects
with one ``DELETE`` request of its own (:meth:`S3Client.delete`). :meth:`S3Client.list_keys`
lists raw keys (markers included), which the tests use to check that none are left.

The client needs static credentials: the catalog's ``s3.access-key-id`` and
``s3.secret-access-key`` (``s3.session-token``), else ``AWS_ACCESS_KEY_ID`` and
``AWS_SECRET_ACCESS_KEY`` (``AWS_SESSION_TOKEN``) from the environment, as pyarrow would find
them. Without them (credentials from an AWS profile, an instance role, ``s3.role-arn``),
:func:`s3_client` returns ``None`` and deletes go through pyarrow, markers and all.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import http.client
import os
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from urllib.parse import quote, urlencode, urlparse

from lakecat.metadata.errors import (
    NoSuchBucket,
    StorageAccessDenied,
    StorageError,
    StorageUnreachable,
)
from lakecat.metadata.io.storage import (
    CLIENT_ACCESS_KEY_ID,
    CLIENT_REGION,
    CLIENT_ROLE_ARN,
    CLIENT_SECRET_ACCESS_KEY,
    CLIENT_SESSION_TOKEN,
    S3_ACCESS_KEY_ID,
    S3_ANONYMOUS,
    S3_ENDPOINT,
    S3_REGION,
    S3_REQUEST_TIMEOUT,
    S3_ROLE_ARN,
    S3_SECRET_ACCESS_KEY,
    S3_SESSION_TOKEN,
    first_value,
    parse_bool,
    s3_arguments,
)

__all__ = ["S3Client", "s3_client"]

_EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
_DEFAULT_TIMEOUT_S = 10.0
_ATTEMPTS = 3
_DENIED_CODES = frozenset(
    {"AccessDenied", "SignatureDoesNotMatch", "InvalidAccessKeyId", "ExpiredToken"}
)


@dataclass(frozen=True)
class S3Client:
    """Signed requests to one S3 endpoint."""

    endpoint: str  # scheme://host[:port]
    region: str
    access_key: str = field(repr=False)
    secret_key: str = field(repr=False)
    session_token: str | None = field(default=None, repr=False)
    virtual_hosted: bool = False  # bucket.host instead of host/bucket
    timeout_s: float = _DEFAULT_TIMEOUT_S

    def delete(self, bucket: str, key: str, *, location: str) -> None:
        """Delete one object; an object that is already gone is not an error."""
        status, body = self._request("DELETE", bucket, key, {}, location=location)
        if status in (200, 204) or (status == 404 and _code(body) in ("NoSuchKey", None)):
            return
        raise self._error(status, body, action="delete", location=location)

    def list_keys(self, bucket: str, prefix: str) -> Iterator[str]:
        """Every key under ``prefix`` as the server stores it (ListObjectsV2)."""
        token: str | None = None
        while True:
            query = {"list-type": "2", "prefix": prefix}
            if token:
                query["continuation-token"] = token
            where = f"s3://{bucket}/{prefix}"
            status, body = self._request("GET", bucket, "", query, location=where)
            if status != 200:
                raise self._error(status, body, action="list", location=where)
            root = ET.fromstring(body)
            ns = root.tag.partition("}")[0] + "}" if root.tag.startswith("{") else ""
            for contents in root.iter(f"{ns}Contents"):
                key = contents.find(f"{ns}Key")
                if key is not None and key.text is not None:
                    yield key.text
            token_element = root.find(f"{ns}NextContinuationToken")
            if token_element is None or not token_element.text:
                return
            token = token_element.text

    def _request(
        self, method: str, bucket: str, key: str, query: Mapping[str, str], *, location: str
    ) -> tuple[int, bytes]:
        url = urlparse(self.endpoint)
        host = url.netloc
        path = "/" + quote(key, safe="/~")
        if self.virtual_hosted:
            host = f"{bucket}.{host}"
        else:
            path = f"/{quote(bucket, safe='')}{path if key else ''}"
        canonical_query = urlencode(sorted(query.items()), quote_via=quote, safe="~")
        headers = self._signed_headers(method, host, path, canonical_query)
        target = path + (f"?{canonical_query}" if canonical_query else "")
        last: OSError | None = None
        for _ in range(_ATTEMPTS):
            connection = self._connection(url.scheme, host)
            try:
                connection.request(method, target, headers=headers)
                response = connection.getresponse()
                body = response.read()
                if response.status < 500:
                    return response.status, body
                last = OSError(f"HTTP {response.status}")
            except TimeoutError as exc:  # a server that hangs: waiting again would hang again
                last = exc
                break
            except OSError as exc:  # refused, unknown host, reset
                last = exc
            finally:
                connection.close()
        raise StorageUnreachable(
            f"cannot reach {location}: the object store at {self.endpoint} did not answer "
            f"(check {S3_ENDPOINT} and that the server is running; {type(last).__name__})"
        )

    def _connection(self, scheme: str, host: str) -> http.client.HTTPConnection:
        if scheme == "https":
            return http.client.HTTPSConnection(host, timeout=self.timeout_s)
        return http.client.HTTPConnection(host, timeout=self.timeout_s)

    def _signed_headers(
        self, method: str, host: str, path: str, canonical_query: str
    ) -> dict[str, str]:
        now = dt.datetime.now(dt.UTC)
        amz_date = now.strftime("%Y%m%dT%H%M%SZ")
        day = now.strftime("%Y%m%d")
        headers = {
            "host": host,
            "x-amz-content-sha256": _EMPTY_SHA256,
            "x-amz-date": amz_date,
        }
        if self.session_token:
            headers["x-amz-security-token"] = self.session_token
        names = sorted(headers)
        canonical = "\n".join(
            [
                method,
                path,
                canonical_query,
                "".join(f"{name}:{headers[name].strip()}\n" for name in names),
                ";".join(names),
                _EMPTY_SHA256,
            ]
        )
        scope = f"{day}/{self.region}/s3/aws4_request"
        to_sign = "\n".join(
            ["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()]
        )
        key = f"AWS4{self.secret_key}".encode()
        for part in (day, self.region, "s3", "aws4_request"):
            key = hmac.new(key, part.encode(), hashlib.sha256).digest()
        signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
        headers["authorization"] = (
            f"AWS4-HMAC-SHA256 Credential={self.access_key}/{scope}, "
            f"SignedHeaders={';'.join(names)}, Signature={signature}"
        )
        return headers

    def _error(self, status: int, body: bytes, *, action: str, location: str) -> StorageError:
        code = _code(body)
        if status == 403 or code in _DENIED_CODES:
            return StorageAccessDenied(
                f"cannot {action} {location}: the object store at {self.endpoint} refused "
                f"access; the credentials ({S3_ACCESS_KEY_ID}, {S3_SECRET_ACCESS_KEY}, "
                f"{S3_SESSION_TOKEN}) are wrong, expired, or not allowed to {action} there "
                f"({code or status})"
            )
        if code == "NoSuchBucket":
            bucket = urlparse(location).netloc
            return NoSuchBucket(
                f"cannot {action} {location}: bucket {bucket!r} does not exist at "
                f"{self.endpoint} (create it, or fix the warehouse or table location)"
            )
        return StorageError(f"cannot {action} {location}: HTTP {status} ({code or 'no code'})")


def s3_client(properties: Mapping[str, str], env: Mapping[str, str]) -> S3Client | None:
    """A client for the S3 store ``properties`` configure, or ``None`` when the credentials
    are not static (see the module docstring) or requests are anonymous."""
    p = properties
    if parse_bool(S3_ANONYMOUS, p.get(S3_ANONYMOUS, "false")) or first_value(
        p, S3_ROLE_ARN, CLIENT_ROLE_ARN
    ):
        return None
    access = first_value(p, S3_ACCESS_KEY_ID, CLIENT_ACCESS_KEY_ID)
    secret = first_value(p, S3_SECRET_ACCESS_KEY, CLIENT_SECRET_ACCESS_KEY)
    token = first_value(p, S3_SESSION_TOKEN, CLIENT_SESSION_TOKEN)
    if access is None:
        access, secret = env.get("AWS_ACCESS_KEY_ID"), env.get("AWS_SECRET_ACCESS_KEY")
        token = env.get("AWS_SESSION_TOKEN")
    if not access or not secret:
        return None
    region = (
        first_value(p, S3_REGION, CLIENT_REGION)
        or env.get("AWS_REGION")
        or env.get("AWS_DEFAULT_REGION")
        or "us-east-1"
    )
    endpoint = p.get(S3_ENDPOINT) or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
    virtual = s3_arguments(p).get("force_virtual_addressing", False)
    if endpoint is None:
        endpoint, virtual = f"https://s3.{region}.amazonaws.com", True
    elif "://" not in endpoint:
        endpoint = f"https://{endpoint}"
    timeout = float(p.get(S3_REQUEST_TIMEOUT, _DEFAULT_TIMEOUT_S))
    return S3Client(
        endpoint=endpoint.rstrip("/"),
        region=region,
        access_key=access,
        secret_key=secret,
        session_token=token or None,
        virtual_hosted=bool(virtual),
        timeout_s=timeout,
    )


def _code(body: bytes) -> str | None:
    """The ``<Code>`` of an S3 error document, or ``None``."""
    if not body:
        return None
    try:
        root = ET.fromstring(body)
    except ET.ParseError:
        return None
    for element in root.iter():
        if element.tag.rpartition("}")[2] == "Code" and element.text:
            return element.text
    return None


def environment() -> Mapping[str, str]:
    """The process environment (read where a FileIO first needs credentials)."""
    return os.environ
