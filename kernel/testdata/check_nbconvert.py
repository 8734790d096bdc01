"""Executes testdata/nbconvert.ipynb with `jupyter nbconvert --execute` and checks its outputs."""
import json
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
out_dir = tempfile.mkdtemp()
subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
                "--ExecutePreprocessor.timeout=120", "--output-dir", out_dir,
                os.path.join(here, "nbconvert.ipynb")], check=True)
nb = json.load(open(os.path.join(out_dir, "nbconvert.ipynb")))


def text(v):
    return "".join(v) if isinstance(v, list) else v


for c in nb["cells"]:
    for o in c.get("outputs", []):
        if "text" in o:
            o["text"] = text(o["text"])
        for k, v in o.get("data", {}).items():
            o["data"][k] = text(v)

code = [c for c in nb["cells"] if c["cell_type"] == "code"]
assert code[0]["outputs"] == [{"name": "stdout", "output_type": "stream", "text": "hello from Go\n"}], code[0]["outputs"]
res = code[1]["outputs"][0]
assert res["output_type"] == "execute_result" and res["data"]["text/plain"] == "144", res
assert res["execution_count"] == 2, res
html = code[2]["outputs"][0]
assert html["output_type"] == "display_data" and html["data"]["text/html"] == "<b>bold</b>", html
assert code[3]["outputs"][0]["name"] == "stderr" and code[3]["outputs"][0]["text"] == "to stderr\n", code[3]["outputs"]
print("nbconvert outputs as expected")
