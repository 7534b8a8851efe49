"""Uploads in an S3-compatible bucket (STORAGE_BACKEND=s3, docs/operations.md "Scale-out").

A real S3-compatible HTTP server on loopback (moto's server, a dev dependency) holds the bucket;
the web side (this process) and a real Celery worker (its own MEDIA_ROOT, empty, so it can only
read the bucket) are configured by the same environment variables production uses. Upload ->
extraction by the worker -> the console's download -> delete, all through the bucket.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid

import boto3
import httpx
import pytest
from django.core.exceptions import ImproperlyConfigured

from apps.knowledge import pipeline
from apps.knowledge.models import KnowledgeDocument
from config.storage import default_storage_settings
from tests.knowledge.conftest import upload
from tests.redis_server import free_port
from tests.workers import WorkerProcess, wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
               "AWS_DEFAULT_REGION": "us-east-1"}  # fmt: skip


@pytest.fixture
def s3_server():
    """moto's S3-compatible server on a free loopback port."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(url, timeout=1)
            break
        except httpx.TransportError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                pytest.fail("moto's S3 server did not start")
            time.sleep(0.2)
    yield url
    process.terminate()
    process.wait(timeout=10)


@pytest.fixture
def bucket(s3_server, settings, monkeypatch, tmp_path):
    """A fresh bucket, and the settings (ours and the worker's) that store uploads in it."""
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    client = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1")
    name = f"uploads-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=name)
    env = {"STORAGE_BACKEND": "s3", "S3_BUCKET": name, "S3_ENDPOINT_URL": s3_server,
           "S3_PREFIX": "console", "S3_ADDRESSING_STYLE": "path", **CREDENTIALS}  # fmt: skip
    # This process: what config.settings builds from the same variables.
    storage = default_storage_settings(env, memory_limit=settings.FILE_UPLOAD_MAX_MEMORY_SIZE)
    settings.STORAGES = {**settings.STORAGES, "default": storage}
    settings.MEDIA_ROOT = tmp_path / "web-media-unused"
    return client, name, env


def _keys(client, bucket_name: str) -> list[str]:
    listing = client.list_objects_v2(Bucket=bucket_name)
    return [item["Key"] for item in listing.get("Contents", [])]


def test_settings_build_an_s3_storage_from_the_environment():
    env = {"STORAGE_BACKEND": "S3", "S3_BUCKET": "uploads", "S3_ENDPOINT_URL": "http://s3:9000",
           "S3_PREFIX": "/console/"}  # fmt: skip
    storage = default_storage_settings(env, memory_limit=1024)
    assert storage["BACKEND"] == "storages.backends.s3.S3Storage"
    options = storage["OPTIONS"]
    assert (options["bucket_name"], options["endpoint_url"]) == ("uploads", "http://s3:9000")
    assert (options["location"], options["region_name"]) == ("console", None)
    assert (options["default_acl"], options["file_overwrite"]) == (None, False)
    assert options["max_memory_size"] == 1024
    assert default_storage_settings({}, memory_limit=1)["BACKEND"].endswith("FileSystemStorage")
    with pytest.raises(ImproperlyConfigured, match="S3_ADDRESSING_STYLE"):
        default_storage_settings({**env, "S3_ADDRESSING_STYLE": "sideways"}, memory_limit=1)
    with pytest.raises(ImproperlyConfigured, match="STORAGE_BACKEND"):
        default_storage_settings({"STORAGE_BACKEND": "ftp"}, memory_limit=1)


def test_s3_without_a_bucket_stops_the_process_at_start_up():
    env = {**os.environ, "STORAGE_BACKEND": "s3", "S3_BUCKET": ""}
    result = subprocess.run(
        [sys.executable, "-c", "import django, os; os.environ['DJANGO_SETTINGS_MODULE'] = "
         "'config.settings'; django.setup()"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode != 0
    assert "STORAGE_BACKEND=s3 needs S3_BUCKET" in result.stderr


def test_upload_extraction_download_and_delete_go_through_the_bucket(
    bucket, api, owner_client, tmp_path
):
    client, name, env = bucket
    worker = WorkerProcess(MEDIA_ROOT=str(tmp_path / "worker-media-empty"), **env).start()
    try:
        data = b"# Descaling\n\nDescale the kettle monthly with citric acid.\n" * 2000
        response = api.post("/v1/knowledge/files", data={"file": upload(data, "descale.md")})
        assert response.status == 201, response.body
        document_id = response.json()["id"]
        keys = _keys(client, name)
        assert len(keys) == 1 and keys[0].startswith("console/knowledge/")
        assert keys[0].endswith(f"/{document_id}/descale.md")
        assert client.get_object(Bucket=name, Key=keys[0])["Body"].read() == data
        assert not (tmp_path / "web-media-unused").exists()

        def status() -> str:
            return KnowledgeDocument.objects.get(pk=document_id).status

        wait_for(lambda: status() != "processing", timeout=90, message="never extracted")
        assert status() == "ready"
        content = api.get(f"/v1/knowledge/{document_id}/content").body.decode()
        assert "citric acid" in content
        assert not (tmp_path / "worker-media-empty").exists()

        download = owner_client.get(f"/knowledge/{document_id}/download/")
        assert download.status_code == 200
        assert b"".join(download.streaming_content) == data

        assert api.delete(f"/v1/knowledge/{document_id}").status == 204
        assert _keys(client, name) == []
        assert owner_client.get(f"/knowledge/{document_id}/download/").status_code == 404
    finally:
        worker.stop()


def test_a_file_gone_from_the_bucket_is_a_clear_404_and_a_failed_extraction(
    bucket, api, owner_client
):
    client, name, _env = bucket
    response = api.post("/v1/knowledge/files", data={"file": upload(b"# A\n\nB.\n", "a.md")})
    document_id = response.json()["id"]
    for key in _keys(client, name):
        client.delete_object(Bucket=name, Key=key)
    download = owner_client.get(f"/knowledge/{document_id}/download/")
    assert download.status_code == 404
    assert "no longer stored" in download.content.decode()
    pipeline.document_ingest(document_id=document_id)
    document = KnowledgeDocument.objects.get(pk=document_id)
    assert (document.status, document.error_message) == ("failed", "The stored file is missing.")
