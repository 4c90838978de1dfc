"""Where the storage sink's files go: a local directory or an S3 bucket, behind one interface.

The storage sink (`sinks/storage.py`) owns the layout, every path of it; a store only puts,
lists and gets whole files by their path under its root, as TiDB's `ExternalStorage`
(br/pkg/storage) does for TiCDC. A file is whole or absent for a reader: a local one is
written to a temporary name and renamed, an S3 object is one PutObject (a PUT makes a whole
object or none, as TiCDC's `WriteFile` relies on).

- `LocalStore`: DIR through `Staging` (`sinks/staging.py`): a run's files appear in DIR when
  it succeeds, a long-running changefeed's as they are written.
- `S3Store`: s3://BUCKET/PREFIX through boto3, the client set up from the URI's parameters as
  TiDB's `NewS3Storage` sets up its own (endpoint, region, path style, static keys or the
  environment's credentials as boto3 finds them, an assumed role). Objects are written in
  place, as TiCDC writes them: there is no rename in S3. A prefix that holds objects must hold
  the layout's only, and is cleared first with `overwrite`, as a directory is.

Every failure is a `SimError` naming the bucket and key and what S3 said (its error code and
message), or that the endpoint could not be reached, or timed out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ticdc_sim.config import S3Location, SinkURI, s3_location
from ticdc_sim.errors import ConfigError, SimError
from ticdc_sim.sinks.retention import WriteFailed, cannot_write
from ticdc_sim.sinks.staging import NotEmpty, Staging, write_atomically

if TYPE_CHECKING:
    from ticdc_sim.sinks.staging import Finishing

DEFAULT_REGION = "us-east-1"  # s3.go defaultRegion
# botocore's retries: "standard" mode retries throttling, 5xx and connection errors, 3 tries
# in all (s3.go maxErrorRetries); a connection or a read stalls no longer than this
_CONNECT_TIMEOUT_S = 10
_READ_TIMEOUT_S = 60
_RETRIES = {"max_attempts": 3, "mode": "standard"}
_DELETE_BATCH = 1000  # DeleteObjects' limit


class Store(Protocol):
    """A storage sink's destination: files by their `/`-separated path under its root."""

    finishing: Finishing  # what `StagedSink.close`/`abort` does with it at the end

    def put(self, name: str, data: bytes) -> None: ...

    def delete(self, name: str) -> None:
        """A file written before goes (a cap on the bytes kept removes the oldest)."""
        ...

    def names(self) -> list[str]:
        """Every file's path under the root, sorted."""
        ...

    def get(self, name: str) -> bytes: ...

    def where(self, name: str = "") -> str:
        """How errors name a file (the root itself for "")."""
        ...

    def written(self) -> Store:
        """What was put so far, to read (before a run's files are in place)."""
        ...


def open_store(
    sink: SinkURI,
    ours: Callable[[str], bool],
    *,
    overwrite: bool = False,
    in_place: bool = False,
) -> Store:
    """The store a storage sink writes to; `ours(name)`: whether a file already there is
    the layout's (so `overwrite` may replace it)."""
    if sink.scheme == "s3":
        store = S3Store(s3_location(sink))
        store.clear(ours, overwrite)
        return store
    return LocalStore.writing(Path(sink.target), ours, overwrite=overwrite, in_place=in_place)


def read_store(sink: SinkURI) -> Store:
    """The store a storage sink wrote, to read: a directory, or a prefix with objects (S3
    has no empty directories: a prefix without any is said, as a directory that is not
    there is, for a mistyped one)."""
    if sink.scheme == "s3":
        store = S3Store(s3_location(sink))
        if not store.names():
            raise ConfigError(f"storage source: {store.where()} holds no objects")
        return store
    root = Path(sink.target)
    if not root.is_dir():
        raise ConfigError(f"storage source: {root} is not a directory")
    return LocalStore(root, root)


class _InPlace:
    """A store's end where files are in place once written (S3's objects, a directory read)."""

    def __init__(self, where: str) -> None:
        self.where, self.replaced = where, False

    def location(self) -> str:
        return self.where

    def commit(self) -> None:
        pass

    def keep_partial(self) -> None:
        pass


class LocalStore:
    def __init__(self, root: Path, work: Path, finishing: Finishing | None = None) -> None:
        self.root, self.work = root, work
        self.finishing = finishing or _InPlace(str(root))

    @classmethod
    def writing(
        cls, root: Path, ours: Callable[[str], bool], *, overwrite: bool, in_place: bool
    ) -> LocalStore:
        def our_entry(entry: Path) -> bool:
            if entry.is_file():
                return ours(entry.name)
            return entry.is_dir() and all(
                p.is_dir() or ours(p.relative_to(root).as_posix()) for p in entry.rglob("*")
            )

        staging = Staging(root, "file", overwrite, our_entry, in_place=in_place)
        return cls(root, staging.work, staging)

    def put(self, name: str, data: bytes) -> None:
        path = self.work / name
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, data)  # a reader never sees half a file
        except OSError as e:
            raise cannot_write(path, e) from None

    def delete(self, name: str) -> None:
        path = self.work / name
        try:
            path.unlink(missing_ok=True)  # gone already: no longer kept either way
        except OSError as e:
            raise WriteFailed(f"cannot remove {path}: {e.strerror}") from None

    def names(self) -> list[str]:
        return sorted(p.relative_to(self.root).as_posix() for p in _files(self.root))

    def get(self, name: str) -> bytes:
        try:
            return (self.root / name).read_bytes()
        except OSError as e:
            raise SimError(f"cannot read {self.root / name}: {e.strerror}") from None

    def where(self, name: str = "") -> str:
        return str(self.root / name) if name else str(self.root)

    def written(self) -> Store:
        # a run's staged files are in place once it has closed
        where = self.work if self.work.exists() else self.root
        return LocalStore(where, where)


def _files(root: Path) -> Iterator[Path]:
    return (p for p in root.rglob("*") if p.is_file())


class S3Store:
    def __init__(self, location: S3Location) -> None:
        self.location = location
        self.bucket = location.bucket
        self.prefix = f"{location.prefix}/" if location.prefix else ""
        self.finishing: Finishing = _InPlace(location.url())
        self.extra = {
            name: value
            for name, value in (
                ("StorageClass", location.storage_class),
                ("ServerSideEncryption", location.sse),
                ("SSEKMSKeyId", location.sse_kms_key_id),
                ("ACL", location.acl),
            )
            if value
        }
        self.client = _client(location, location.region or DEFAULT_REGION)
        self._check_bucket()

    def _check_bucket(self) -> None:
        """s3.go NewS3Storage: the bucket's region (of AWS S3: `provider` empty or aws) must
        be the one asked for; unasked, it is the bucket's own. HeadBucket also says that the
        bucket is there and the credentials may use it, before any file is written."""
        found = self._call("HeadBucket", "", self.client.head_bucket, Bucket=self.bucket)
        headers = found.get("ResponseMetadata", {}).get("HTTPHeaders", {})
        real = headers.get("x-amz-bucket-region", "")
        asked = self.location.region
        if not real or self.location.provider not in ("", "aws") or real == asked:
            return
        if asked:
            raise ConfigError(
                f"s3 bucket and region are not matched, bucket={self.bucket}, input"
                f" region={asked}, real region={real}"
            )
        if real != DEFAULT_REGION:
            self.client = _client(self.location, real)

    def put(self, name: str, data: bytes) -> None:
        key = self.prefix + name
        self._call(
            "PutObject", name, self.client.put_object, Bucket=self.bucket, Key=key, Body=data,
            **self.extra,
        )  # fmt: skip

    def delete(self, name: str) -> None:
        self._call(
            "DeleteObject", name, self.client.delete_object, Bucket=self.bucket,
            Key=self.prefix + name,
        )  # fmt: skip

    def names(self) -> list[str]:
        pages = self._call("ListObjectsV2", "", self._list)
        return sorted(key[len(self.prefix) :] for key in pages)

    def _list(self) -> list[str]:
        paginator = self.client.get_paginator("list_objects_v2")
        return [
            item["Key"]
            for page in paginator.paginate(Bucket=self.bucket, Prefix=self.prefix)
            for item in page.get("Contents", [])
        ]

    def get(self, name: str) -> bytes:
        found = self._call(
            "GetObject", name, self.client.get_object, Bucket=self.bucket, Key=self.prefix + name
        )
        body: bytes = self._call("GetObject", name, found["Body"].read)
        return body

    def clear(self, ours: Callable[[str], bool], overwrite: bool) -> None:
        """What the prefix holds must be the layout's, and goes with `overwrite`."""
        names = self.names()
        if not names:
            return
        if not overwrite:
            raise NotEmpty("s3", self.where())
        self.finishing.replaced = True
        foreign = next((n for n in names if not ours(n)), None)
        if foreign is not None:
            raise ConfigError(
                f"s3 sink: {self.where()} holds {self.where(foreign)}, which is not ticdc-sim"
                " output; refusing to overwrite it"
            )
        for start in range(0, len(names), _DELETE_BATCH):
            batch = [{"Key": self.prefix + n} for n in names[start : start + _DELETE_BATCH]]
            done = self._call(
                "DeleteObjects", "", self.client.delete_objects, Bucket=self.bucket,
                Delete={"Objects": batch, "Quiet": True},
            )  # fmt: skip
            for error in done.get("Errors", []):
                name = error.get("Key", "")[len(self.prefix) :]
                raise SimError(
                    f"{self.where(name)}: DeleteObjects failed: S3 said"
                    f" {error.get('Code')}: {error.get('Message')}"
                )

    def where(self, name: str = "") -> str:
        return self.location.url(name)

    def written(self) -> Store:
        return self

    def _call(self, action: str, name: str, call: Callable[..., Any], **kwargs: Any) -> Any:
        """`call(**kwargs)`, its failure as a SimError naming the object and what S3 said."""
        from botocore.exceptions import (
            BotoCoreError,
            ClientError,
            ConnectTimeoutError,
            EndpointConnectionError,
            NoCredentialsError,
            ReadTimeoutError,
        )

        where = self.where(name) if name else self.where()
        try:
            return call(**kwargs)
        except ClientError as e:
            raise SimError(f"{where}: {action} failed: {_said(e.response)}") from None
        except NoCredentialsError:
            raise SimError(
                f"{where}: {action} failed: no AWS credentials; give access-key and"
                " secret-access-key in the sink URI, or set AWS_ACCESS_KEY_ID and"
                " AWS_SECRET_ACCESS_KEY (or AWS_PROFILE) as boto3 reads them"
            ) from None
        except EndpointConnectionError as e:
            endpoint = self.location.endpoint or "AWS S3"
            raise SimError(
                f"{where}: {action} failed: cannot connect to the S3 endpoint {endpoint}:"
                f" {_unreachable(e.kwargs.get('error', e))}"
            ) from None
        except (ConnectTimeoutError, ReadTimeoutError) as e:
            raise SimError(f"{where}: {action} failed: timed out ({e})") from None
        except BotoCoreError as e:
            raise SimError(f"{where}: {action} failed: {_one_line(e)}") from None


# what a HEAD answer's status means: it has no body to say it (HeadBucket)
_HEAD_ERRORS = {
    "301": "PermanentRedirect: the bucket is in region {region}",
    "400": "BadRequest: the bucket's region or name is wrong",
    "403": "AccessDenied: the credentials may not use the bucket",
    "404": "NoSuchBucket: the bucket does not exist",
}


def _said(response: dict[str, Any]) -> str:
    """What S3 answered: its error code and message, and the HTTP status."""
    error = response.get("Error", {})
    meta = response.get("ResponseMetadata", {})
    status = meta.get("HTTPStatusCode", "")
    code, message = error.get("Code", ""), error.get("Message", "")
    if code in _HEAD_ERRORS:
        region = meta.get("HTTPHeaders", {}).get("x-amz-bucket-region", "?")
        return f"S3 said {_HEAD_ERRORS[code].format(region=region)} (HTTP {status})"
    return f"S3 said {code}: {message} (HTTP {status})"


_ERRNO = re.compile(r"\[Errno -?\d+\] (.*)$")


def _unreachable(error: object) -> str:
    """The socket's own words of a connection that failed (`Connection refused`)."""
    text = str(error)
    found = _ERRNO.search(text)
    return found.group(1) if found else text


def _one_line(error: Exception) -> str:
    """botocore's message, its lines joined (parameter validation says one per line)."""
    return " ".join(str(error).split())


def _client(location: S3Location, region: str) -> Any:
    """boto3's S3 client as s3.go NewS3Storage configures aws-sdk-go's: the URI's keys, or the
    credentials boto3 finds itself (environment, profile, instance role); the endpoint for
    every service, STS included (aws-sdk-go's session-wide `Endpoint`)."""
    try:
        import boto3
        from botocore.config import Config
        from botocore.exceptions import BotoCoreError, ClientError
    except ImportError:
        raise ConfigError(
            "the s3:// sink needs boto3, which is not installed (pip install boto3)"
        ) from None
    session = boto3.session.Session(
        aws_access_key_id=location.access_key or None,
        aws_secret_access_key=location.secret_access_key or None,
        aws_session_token=location.session_token or None,
        region_name=region,
    )
    config = Config(
        s3={
            "addressing_style": "path" if location.force_path_style else "virtual",
            "use_accelerate_endpoint": location.use_accelerate_endpoint,
        },
        connect_timeout=_CONNECT_TIMEOUT_S,
        read_timeout=_READ_TIMEOUT_S,
        retries=_RETRIES,
    )
    endpoint = location.endpoint or None
    if location.role_arn:  # stscreds.NewCredentials: the role's temporary keys
        sts = session.client("sts", endpoint_url=endpoint, config=config)
        assume: dict[str, str] = {"RoleArn": location.role_arn, "RoleSessionName": "ticdc-sim"}
        if location.external_id:
            assume["ExternalId"] = location.external_id
        try:
            keys = sts.assume_role(**assume)["Credentials"]
        except (BotoCoreError, ClientError) as e:
            raise SimError(
                f"{location.url()}: AssumeRole {location.role_arn} failed: {_one_line(e)}"
            ) from None
        session = boto3.session.Session(
            aws_access_key_id=keys["AccessKeyId"],
            aws_secret_access_key=keys["SecretAccessKey"],
            aws_session_token=keys["SessionToken"],
            region_name=region,
        )
    return session.client("s3", endpoint_url=endpoint, config=config)
