# A PEP 503 index of one tiny wheel (tinypkg 1.0) in DIR, for `pip download`
# in tests/integration/test_http_clients.sh: DIR/simple/index.html,
# DIR/simple/tinypkg/index.html and the wheel beside it (ratelimit-server
# --serve-dir DIR serves them).   python3 http_pip_index.py DIR
import base64
import hashlib
import os
import sys
import zipfile

root = os.path.join(sys.argv[1], "simple")
os.makedirs(os.path.join(root, "tinypkg"), exist_ok=True)
name = "tinypkg-1.0-py3-none-any.whl"
files = {
    "tinypkg/__init__.py": b"X = 1\n",
    "tinypkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n",
    "tinypkg-1.0.dist-info/WHEEL":
        b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = ""
for f, d in files.items():
    h = base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b"=").decode()
    record += "%s,sha256=%s,%d\n" % (f, h, len(d))
record += "tinypkg-1.0.dist-info/RECORD,,\n"
with zipfile.ZipFile(os.path.join(root, "tinypkg", name), "w") as z:
    for f, d in files.items():
        z.writestr(f, d)
    z.writestr("tinypkg-1.0.dist-info/RECORD", record)
with open(os.path.join(root, "tinypkg", "index.html"), "w") as f:
    f.write('<a href="%s">%s</a>\n' % (name, name))
with open(os.path.join(root, "index.html"), "w") as f:
    f.write('<a href="tinypkg/">tinypkg</a>\n')
