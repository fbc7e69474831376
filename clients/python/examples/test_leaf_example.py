"""The example of docs/ci.md: a LEAF reader for the app under test. gattemu runs profiles/leaf-reader.json (the
plugin starts it: --gattemu-binary, --gattemu-adapter); the test touches the reader, cuts the reader's next
notification to 3 bytes, and waits for the app (the central) to write its first frame.

    pytest examples/test_leaf_example.py --gattemu-adapter hci0      # from the gattemu checkout

While it waits, the app under test (on a phone, or a central script in the same CI job) must connect to the
reader, subscribe to its data characteristic and start the handshake."""
import pytest

from gattemu import match

pytestmark = pytest.mark.gattemu(profile="profiles/leaf-reader.json")


def test_the_app_writes_its_first_frame_after_a_touch(gattemu_device):
    reader = gattemu_device
    reader.fire_trigger("touch")  # the reader is touched: it advertises its touch service for a while
    with reader.fault(on="notify", characteristic="data", truncate=3, count=1):
        hello = reader.wait_for(match("write", characteristic="data"), timeout=120)
        cut = reader.wait_for(match("fault", characteristic="data"), timeout=30)
    assert hello.value[:2] == bytes([0x81, 0x01])  # a plaintext LEAF frame: the app's dUID first
    assert "truncate to 3 bytes" in cut.detail
