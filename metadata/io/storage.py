"""Object-storage configuration: catalog properties, under pyiceberg's names, to pyarrow
filesystems, and pyarrow's storage errors to lakecat's.

A catalog's storage properties (``Catalog(..., properties={...})``, ``lakecat.toml``, the
CLI's ``--property``, the Spark integration) are plain strings, named as pyiceberg and Iceberg
Java name them, and mapped to pyarrow's filesystem arguments as pyiceberg's ``PyArrowFileIO``
maps them (``pyiceberg/io/pyarrow.py``):

==================================  ============================================================
property                            pyarrow
==================================  ============================================================
``s3.endpoint``                     ``S3FileSystem(endpoint_override=)`` (``http://host:port``)
``s3.access-key-id``                ``access_key`` (else ``client.access-key-id``)
``s3.secret-access-key``            ``secret_key`` (else ``client.secret-access-key``)
``s3.session-token``                ``session_token`` (else ``client.session-token``)
``s3.region``                       ``region`` (else ``client.region``; never looked up online)
``s3.path-style-access``            ``force_virtual_addressing`` = not it (Iceberg Java's name)
``s3.force-virtual-addressing``     ``force_virtual_addressing`` (pyiceberg's name)
``s3.connect-timeout``              ``connect_timeout`` (seconds)
``s3.request-timeout``              ``request_timeout`` (seconds)
``s3.anonymous``                    ``anonymous``
``s3.proxy-uri``                    ``proxy_options``
``s3.role-arn``                     ``role_arn`` (else ``client.role-arn``)
``s3.role-session-name``            ``session_name`` (else ``client.role-session-name``)
``gcs.oauth2.token``                ``GcsFileSystem(access_token=)``
``gcs.oauth2.token-expires-at``     ``credential_token_expiration`` (epoch milliseconds)
``gcs.project-id``                  ``project_id``
``gcs.service.host``                ``scheme`` and ``endpoint_override`` (``http://host:port``)
``gcs.default-bucket-location``     ``default_bucket_location``
``adls.account-name``               ``AzureFileSystem(account_name=)`` (else from the location)
``adls.account-key``                ``account_key``
``adls.sas-token``                  ``sas_token``
``adls.tenant-id``                  ``tenant_id``
``adls.client-id``                  ``client_id``
``adls.client-secret``              ``client_secret``
``adls.blob-storage-authority``     ``blob_storage_authority`` (and ``-scheme``)
``adls.dfs-storage-authority``      ``dfs_storage_authority`` (and ``-scheme``)
==================================  ============================================================

What a property does not give, pyarrow finds as it always does (the AWS environment variables
and config files, ``GOOGLE_APPLICATION_CREDENTIALS``, Azure's default credential). Unknown keys
and malformed values are refused (:class:`ValidationError`) before anything is opened, so a
typo is reported, not ignored. The credential properties (:data:`SECRET_PROPERTIES`) never
appear in a repr, a log line or an error message: :func:`redacted` shows them as ``***``.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import pyarrow.fs as pafs

from lakecat.metadata.errors import (
    NoSuchBucket,
    StorageAccessDenied,
    StorageError,
    StorageUnreachable,
    ValidationError,
)

__all__ = [
    "SECRET_PROPERTIES",
    "STORAGE_PROPERTIES",
    "Location",
    "arrow_filesystem",
    "check_storage_properties",
    "parse_location",
    "redacted",
    "storage_error",
]

S3_ENDPOINT = "s3.endpoint"
S3_ACCESS_KEY_ID = "s3.access-key-id"
S3_SECRET_ACCESS_KEY = "s3.secret-access-key"
S3_SESSION_TOKEN = "s3.session-token"
S3_REGION = "s3.region"
S3_PATH_STYLE_ACCESS = "s3.path-style-access"
S3_FORCE_VIRTUAL_ADDRESSING = "s3.force-virtual-addressing"
S3_CONNECT_TIMEOUT = "s3.connect-timeout"
S3_REQUEST_TIMEOUT = "s3.request-timeout"
S3_ANONYMOUS = "s3.anonymous"
S3_PROXY_URI = "s3.proxy-uri"
S3_ROLE_ARN = "s3.role-arn"
S3_ROLE_SESSION_NAME = "s3.role-session-name"
CLIENT_ACCESS_KEY_ID = "client.access-key-id"
CLIENT_SECRET_ACCESS_KEY = "client.secret-access-key"
CLIENT_SESSION_TOKEN = "client.session-token"
CLIENT_REGION = "client.region"
CLIENT_ROLE_ARN = "client.role-arn"
CLIENT_ROLE_SESSION_NAME = "client.role-session-name"
GCS_TOKEN = "gcs.oauth2.token"
GCS_TOKEN_EXPIRES_AT_MS = "gcs.oauth2.token-expires-at"
GCS_PROJECT_ID = "gcs.project-id"
GCS_SERVICE_HOST = "gcs.service.host"
GCS_DEFAULT_LOCATION = "gcs.default-bucket-location"
ADLS_ACCOUNT_NAME = "adls.account-name"
ADLS_ACCOUNT_KEY = "adls.account-key"
ADLS_SAS_TOKEN = "adls.sas-token"
ADLS_TENANT_ID = "adls.tenant-id"
ADLS_CLIENT_ID = "adls.client-id"
ADLS_CLIENT_SECRET = "adls.client-secret"
ADLS_BLOB_STORAGE_AUTHORITY = "adls.blob-storage-authority"
ADLS_DFS_STORAGE_AUTHORITY = "adls.dfs-storage-authority"
ADLS_BLOB_STORAGE_SCHEME = "adls.blob-storage-scheme"
ADLS_DFS_STORAGE_SCHEME = "adls.dfs-storage-scheme"

# Credentials: shown as *** everywhere, kept out of Spark's session configuration.
SECRET_PROPERTIES = frozenset(
    {
        S3_ACCESS_KEY_ID,
        S3_SECRET_ACCESS_KEY,
        S3_SESSION_TOKEN,
        CLIENT_ACCESS_KEY_ID,
        CLIENT_SECRET_ACCESS_KEY,
        CLIENT_SESSION_TOKEN,
        GCS_TOKEN,
        ADLS_ACCOUNT_KEY,
        ADLS_SAS_TOKEN,
        ADLS_CLIENT_SECRET,
    }
)
_BOOLEANS = frozenset({S3_PATH_STYLE_ACCESS, S3_FORCE_VIRTUAL_ADDRESSING, S3_ANONYMOUS})
_SECONDS = frozenset({S3_CONNECT_TIMEOUT, S3_REQUEST_TIMEOUT})
_URLS = frozenset({S3_ENDPOINT, GCS_SERVICE_HOST, S3_PROXY_URI})
STORAGE_PROPERTIES = frozenset(
    {
        S3_ENDPOINT,
        S3_REGION,
        S3_ROLE_ARN,
        S3_ROLE_SESSION_NAME,
        CLIENT_REGION,
        CLIENT_ROLE_ARN,
        CLIENT_ROLE_SESSION_NAME,
        GCS_TOKEN_EXPIRES_AT_MS,
        GCS_PROJECT_ID,
        GCS_SERVICE_HOST,
        GCS_DEFAULT_LOCATION,
        ADLS_ACCOUNT_NAME,
        ADLS_TENANT_ID,
        ADLS_CLIENT_ID,
        ADLS_BLOB_STORAGE_AUTHORITY,
        ADLS_DFS_STORAGE_AUTHORITY,
        ADLS_BLOB_STORAGE_SCHEME,
        ADLS_DFS_STORAGE_SCHEME,
        *_BOOLEANS,
        *_SECONDS,
        S3_PROXY_URI,
        *SECRET_PROPERTIES,
    }
)

S3_SCHEMES = frozenset({"s3", "s3a", "s3n"})
GCS_SCHEMES = frozenset({"gs", "gcs"})
ADLS_SCHEMES = frozenset({"abfs", "abfss", "wasb", "wasbs"})
_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})


def redacted(properties: Mapping[str, str]) -> dict[str, str]:
    """``properties`` with every credential's value replaced by ``***`` (for reprs, logs)."""
    return {k: ("***" if k in SECRET_PROPERTIES else v) for k, v in properties.items()}


def check_storage_properties(properties: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``properties`` after checking every key and value; :class:`ValidationError`
    naming the first bad one (never a credential's value)."""
    out: dict[str, str] = {}
    for key, value in properties.items():
        if not isinstance(key, str) or key not in STORAGE_PROPERTIES:
            raise ValidationError(
                f"unknown catalog property {key!r}; the storage properties are: "
                + ", ".join(sorted(STORAGE_PROPERTIES))
            )
        if not isinstance(value, str) or not value.strip():
            raise ValidationError(f"catalog property {key} must be a non-empty string")
        if key in _BOOLEANS:
            parse_bool(key, value)
        elif key in _SECONDS:
            _seconds(key, value)
        elif key in _URLS and not urlparse(value).netloc:
            raise ValidationError(
                f"catalog property {key} must be a URL like http://127.0.0.1:9000, not {value!r}"
            )
        elif key == GCS_TOKEN_EXPIRES_AT_MS and not value.strip().isdigit():
            raise ValidationError(f"catalog property {key} must be epoch milliseconds")
        out[key] = value.strip() if key not in SECRET_PROPERTIES else value
    if first_value(out, S3_ACCESS_KEY_ID, CLIENT_ACCESS_KEY_ID) is not None and (
        first_value(out, S3_SECRET_ACCESS_KEY, CLIENT_SECRET_ACCESS_KEY) is None
    ):
        raise ValidationError(f"{S3_ACCESS_KEY_ID} is set without {S3_SECRET_ACCESS_KEY}")
    if first_value(out, S3_SECRET_ACCESS_KEY, CLIENT_SECRET_ACCESS_KEY) is not None and (
        first_value(out, S3_ACCESS_KEY_ID, CLIENT_ACCESS_KEY_ID) is None
    ):
        raise ValidationError(f"{S3_SECRET_ACCESS_KEY} is set without {S3_ACCESS_KEY_ID}")
    both = S3_PATH_STYLE_ACCESS in out and S3_FORCE_VIRTUAL_ADDRESSING in out
    if both and parse_bool(S3_PATH_STYLE_ACCESS, out[S3_PATH_STYLE_ACCESS]) == parse_bool(
        S3_FORCE_VIRTUAL_ADDRESSING, out[S3_FORCE_VIRTUAL_ADDRESSING]
    ):
        raise ValidationError(
            f"{S3_PATH_STYLE_ACCESS} and {S3_FORCE_VIRTUAL_ADDRESSING} contradict each other"
        )
    if (GCS_TOKEN in out) != (GCS_TOKEN_EXPIRES_AT_MS in out):
        raise ValidationError(f"{GCS_TOKEN} and {GCS_TOKEN_EXPIRES_AT_MS} go together")
    return out


@dataclass(frozen=True, slots=True)
class Location:
    """A remote location split for pyarrow: ``scheme``, ``bucket`` (the URI's host part: an
    S3 or GCS bucket, ``container@account...`` for ADLS) and ``path`` in the filesystem."""

    scheme: str
    bucket: str
    path: str


def parse_location(location: str) -> Location:
    parsed = urlparse(location)
    scheme = parsed.scheme.lower()
    if not scheme or not parsed.netloc:
        raise ValidationError(f"not an object-store location (scheme://bucket/key): {location}")
    if scheme in ADLS_SCHEMES:
        container = parsed.netloc.split("@", 1)[0]
        return Location(scheme, parsed.netloc, f"{container}{parsed.path}".rstrip("/"))
    return Location(scheme, parsed.netloc, f"{parsed.netloc}{parsed.path}".rstrip("/"))


def arrow_filesystem(
    location: Location, properties: Mapping[str, str], original: str
) -> pafs.FileSystem:
    """A new pyarrow filesystem for ``location``'s bucket configured by ``properties``.

    No I/O: the S3 region comes from the properties or pyarrow's defaults, never from asking
    AWS where the bucket is (``FileSystem.from_uri`` does, which hangs where AWS is not
    reachable)."""
    try:
        if location.scheme in S3_SCHEMES:
            return pafs.S3FileSystem(**s3_arguments(properties))
        if location.scheme in GCS_SCHEMES:
            return pafs.GcsFileSystem(**_gcs_arguments(properties))
        if location.scheme in ADLS_SCHEMES:
            return pafs.AzureFileSystem(**_adls_arguments(location, properties))
        fs, _path = pafs.FileSystem.from_uri(original)
        return fs
    except (OSError, ValueError, TypeError, ImportError) as exc:
        raise StorageError(
            f"cannot open the {location.scheme}:// filesystem for {original}: {exc}"
        ) from exc


def s3_arguments(properties: Mapping[str, str]) -> dict[str, Any]:
    """``S3FileSystem`` keyword arguments for ``properties`` (pyiceberg's mapping)."""
    p = properties
    kwargs: dict[str, Any] = {
        # a small file is one PUT when closed, not a multipart upload opened beforehand
        "allow_delayed_open": True,
    }
    optional = {
        "endpoint_override": p.get(S3_ENDPOINT),
        "access_key": first_value(p, S3_ACCESS_KEY_ID, CLIENT_ACCESS_KEY_ID),
        "secret_key": first_value(p, S3_SECRET_ACCESS_KEY, CLIENT_SECRET_ACCESS_KEY),
        "session_token": first_value(p, S3_SESSION_TOKEN, CLIENT_SESSION_TOKEN),
        "region": first_value(p, S3_REGION, CLIENT_REGION),
        "proxy_options": p.get(S3_PROXY_URI),
        "role_arn": first_value(p, S3_ROLE_ARN, CLIENT_ROLE_ARN),
        "session_name": first_value(p, S3_ROLE_SESSION_NAME, CLIENT_ROLE_SESSION_NAME),
    }
    kwargs.update({k: v for k, v in optional.items() if v is not None})
    if S3_CONNECT_TIMEOUT in p:
        kwargs["connect_timeout"] = _seconds(S3_CONNECT_TIMEOUT, p[S3_CONNECT_TIMEOUT])
    if S3_REQUEST_TIMEOUT in p:
        kwargs["request_timeout"] = _seconds(S3_REQUEST_TIMEOUT, p[S3_REQUEST_TIMEOUT])
    if S3_FORCE_VIRTUAL_ADDRESSING in p:
        kwargs["force_virtual_addressing"] = parse_bool(
            S3_FORCE_VIRTUAL_ADDRESSING, p[S3_FORCE_VIRTUAL_ADDRESSING]
        )
    elif S3_PATH_STYLE_ACCESS in p:
        path_style = parse_bool(S3_PATH_STYLE_ACCESS, p[S3_PATH_STYLE_ACCESS])
        kwargs["force_virtual_addressing"] = not path_style
    if S3_ANONYMOUS in p:
        kwargs["anonymous"] = parse_bool(S3_ANONYMOUS, p[S3_ANONYMOUS])
    return kwargs


def _gcs_arguments(p: Mapping[str, str]) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    if GCS_TOKEN in p:
        kwargs["access_token"] = p[GCS_TOKEN]
        expires_ms = int(p[GCS_TOKEN_EXPIRES_AT_MS])
        kwargs["credential_token_expiration"] = dt.datetime.fromtimestamp(
            expires_ms / 1000, tz=dt.UTC
        )
    if GCS_DEFAULT_LOCATION in p:
        kwargs["default_bucket_location"] = p[GCS_DEFAULT_LOCATION]
    if GCS_PROJECT_ID in p:
        kwargs["project_id"] = p[GCS_PROJECT_ID]
    if GCS_SERVICE_HOST in p:
        url = urlparse(p[GCS_SERVICE_HOST])
        kwargs["scheme"] = url.scheme
        kwargs["endpoint_override"] = url.netloc
    return kwargs


def _adls_arguments(location: Location, p: Mapping[str, str]) -> dict[str, Any]:
    account = p.get(ADLS_ACCOUNT_NAME)
    if account is None and "@" in location.bucket:
        account = location.bucket.split("@", 1)[1].split(".", 1)[0]
    if not account:
        raise ValidationError(
            f"no Azure storage account for {location.scheme}://{location.bucket}: set "
            f"{ADLS_ACCOUNT_NAME} or use container@account.dfs.core.windows.net locations"
        )
    names = {
        ADLS_ACCOUNT_KEY: "account_key",
        ADLS_SAS_TOKEN: "sas_token",
        ADLS_TENANT_ID: "tenant_id",
        ADLS_CLIENT_ID: "client_id",
        ADLS_CLIENT_SECRET: "client_secret",
        ADLS_BLOB_STORAGE_AUTHORITY: "blob_storage_authority",
        ADLS_DFS_STORAGE_AUTHORITY: "dfs_storage_authority",
        ADLS_BLOB_STORAGE_SCHEME: "blob_storage_scheme",
        ADLS_DFS_STORAGE_SCHEME: "dfs_storage_scheme",
    }
    kwargs: dict[str, Any] = {"account_name": account}
    kwargs.update({arg: p[key] for key, arg in names.items() if key in p})
    return kwargs


# ---- errors ----------------------------------------------------------------------------------

# pyarrow flattens the AWS SDK's error into an OSError whose text names the SDK's error code
# ("AWS Error ACCESS_DENIED during HeadObject operation: ..."): that code is the only
# structured part pyarrow gives, so it is read here, at the one boundary, and nowhere else.
_AWS_ERROR = re.compile(r"AWS Error ([A-Z_]+)")
_UNREACHABLE = frozenset({"NETWORK_CONNECTION", "REQUEST_TIMEOUT", "SERVICE_UNAVAILABLE"})
_DENIED = frozenset(
    {
        "ACCESS_DENIED",
        "SIGNATURE_DOES_NOT_MATCH",
        "INVALID_ACCESS_KEY_ID",
        "INVALID_CLIENT_TOKEN_ID",
        "UNRECOGNIZED_CLIENT",
        "EXPIRED_TOKEN",
        "INVALID_SIGNATURE",
        "MISSING_AUTHENTICATION_TOKEN",
        "CLIENT_SIGNING_FAILURE",
    }
)


def storage_error(
    exc: OSError, *, action: str, location: str, properties: Mapping[str, str]
) -> StorageError:
    """The lakecat error for a pyarrow storage failure (``exc``) while doing ``action`` (a
    verb: "read", "write", ...) on ``location``: unreachable endpoint, refused credentials and
    missing bucket get their own types and a message in plain words; the message never holds
    a credential."""
    if isinstance(exc, StorageError):
        return exc
    code = _aws_error_code(exc)
    scheme = location.split("://", 1)[0].lower()
    endpoint = _endpoint_words(scheme, properties)
    if code in _UNREACHABLE:
        return StorageUnreachable(
            f"cannot {action} {location}: the object store at {endpoint} did not answer "
            f"(check {S3_ENDPOINT} and that the server is running; {code})"
        )
    if code in _DENIED:
        return StorageAccessDenied(
            f"cannot {action} {location}: the object store at {endpoint} refused access; the "
            f"credentials ({S3_ACCESS_KEY_ID}, {S3_SECRET_ACCESS_KEY}, {S3_SESSION_TOKEN}) are "
            f"wrong, expired, or not allowed to {action} there ({code})"
        )
    if code == "NO_SUCH_BUCKET":
        bucket = urlparse(location).netloc
        return NoSuchBucket(
            f"cannot {action} {location}: bucket {bucket!r} does not exist at {endpoint} "
            "(create it, or fix the warehouse or table location)"
        )
    return StorageError(f"cannot {action} {location}: {exc}")


def _aws_error_code(exc: OSError) -> str | None:
    found = _AWS_ERROR.search(str(exc))
    return found.group(1) if found else None


def _endpoint_words(scheme: str, properties: Mapping[str, str]) -> str:
    if scheme in S3_SCHEMES:
        endpoint = properties.get(S3_ENDPOINT)
        if endpoint is None:
            return "the default S3 endpoint (AWS, or AWS_ENDPOINT_URL)"
        parsed = urlparse(endpoint)
        host = parsed.hostname or endpoint
        port = f":{parsed.port}" if parsed.port else ""
        return f"{parsed.scheme or 'https'}://{host}{port}"  # no user:password@ part
    return f"the {scheme}:// endpoint"


# ---- values ----------------------------------------------------------------------------------


def first_value(properties: Mapping[str, str], *keys: str) -> str | None:
    for key in keys:
        value = properties.get(key)
        if value:
            return value
    return None


def parse_bool(key: str, value: str) -> bool:
    text = value.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValidationError(f"catalog property {key} must be true or false, not {value!r}")


def _seconds(key: str, value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise ValidationError(f"catalog property {key} must be seconds, not {value!r}") from None
    if not seconds > 0 or seconds == float("inf"):
        raise ValidationError(f"catalog property {key} must be a positive number of seconds")
    return seconds
