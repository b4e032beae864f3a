import os


def getDeviceCount() -> int:
    return int(os.environ.get("FAKE_GPUS", "8"))


def getDeviceProperties(i: int) -> dict:
    return {"name": b"FakeGPU (tests)"}
