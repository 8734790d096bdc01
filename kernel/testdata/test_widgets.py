"""The Jupyter widget protocol 2.1.0 of gpunotes, through jupyter_client."""
import sys
import time
import unittest

from jupyter_client.manager import start_new_kernel

TIMEOUT = 60
VIEW = "application/vnd.jupyter.widget-view+json"


class WidgetTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.km, cls.kc = start_new_kernel(kernel_name="gpunotes")
        cls.kc.execute_interactive('import "fmt"', timeout=TIMEOUT)

    @classmethod
    def tearDownClass(cls):
        cls.kc.stop_channels()
        cls.km.shutdown_kernel(now=True)

    def drain(self, msg_id):
        """Every iopub message with parent msg_id up to its idle (returned without the idle)."""
        out = []
        while True:
            m = self.kc.get_iopub_msg(timeout=TIMEOUT)
            if m["parent_header"].get("msg_id") != msg_id:
                self.others.append(m)
                continue
            if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                return out
            out.append(m)

    def setUp(self):
        self.others = []

    def run_cell(self, code):
        msg_id = self.kc.execute(code)
        reply = self.kc.get_shell_msg(timeout=TIMEOUT)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = self.kc.get_shell_msg(timeout=TIMEOUT)
        out = self.drain(msg_id)
        self.assertEqual(reply["content"]["status"], "ok", (reply["content"], out))
        return out

    def result(self, code):
        for m in self.run_cell(code):
            if m["msg_type"] == "execute_result":
                return m["content"]["data"]["text/plain"]
        self.fail("no result for " + code)

    def comm_send(self, comm_id, data, buffers=None, msg_type="comm_msg"):
        content = {"comm_id": comm_id, "data": data}
        msg = self.kc.session.msg(msg_type, content)
        self.kc.shell_channel.send(msg) if not buffers else self.kc.session.send(
            self.kc.shell_channel.socket, msg, buffers=buffers)
        return msg["header"]["msg_id"]

    def open_slider(self, value=5):
        out = self.run_cell(f's := widget.NewIntSlider({value}, 0, 100, widget.T{{"description": "n"}}); s')
        opens = [m for m in out if m["msg_type"] == "comm_open"]
        self.assertEqual(len(opens), 1, out)
        return opens[0], out

    def test_open_and_display_shapes(self):
        op, out = self.open_slider()
        c = op["content"]
        self.assertEqual(c["target_name"], "jupyter.widget")
        self.assertEqual(op["metadata"], {"version": "2.1.0"})
        st = c["data"]["state"]
        self.assertEqual(st["_model_name"], "IntSliderModel")
        self.assertEqual(st["_view_name"], "IntSliderView")
        self.assertEqual(st["_model_module"], "@jupyter-widgets/controls")
        self.assertEqual(st["_model_module_version"], "2.0.0")
        self.assertEqual((st["value"], st["min"], st["max"], st["step"], st["description"]), (5, 0, 100, 1, "n"))
        self.assertEqual(c["data"]["buffer_paths"], [])
        res = [m for m in out if m["msg_type"] == "execute_result"][0]["content"]["data"]
        self.assertEqual(res[VIEW], {"model_id": c["comm_id"], "version_major": 2, "version_minor": 0})
        self.assertIn("text/plain", res)

    def test_update_echo_observe_and_busy_idle_parents(self):
        op, _ = self.open_slider()
        cid = op["content"]["comm_id"]
        self.run_cell('last := 0\ns.Observe("value", func(c widget.Change) { last = c.Int(); fmt.Println("got", c.Int()) })')
        mid = self.comm_send(cid, {"method": "update", "state": {"value": 8}, "buffer_paths": []})
        # busy first, with the comm message as parent; idle (drain's end) too.
        first = self.kc.get_iopub_msg(timeout=TIMEOUT)
        while first["parent_header"].get("msg_id") != mid:
            first = self.kc.get_iopub_msg(timeout=TIMEOUT)
        self.assertEqual((first["msg_type"], first["content"]["execution_state"]), ("status", "busy"))
        out = self.drain(mid)
        echo = [m for m in out if m["msg_type"] == "comm_msg" and m["content"]["data"]["method"] == "echo_update"]
        self.assertEqual(len(echo), 1, out)
        self.assertEqual(echo[0]["content"]["data"]["state"], {"value": 8})
        # the callback's print lands in the Output widget shown in the observing cell
        texts = [o.get("text", "") for m in out if m["msg_type"] == "comm_msg"
                 for o in m["content"]["data"].get("state", {}).get("outputs", [])]
        self.assertIn("got 8\n", texts, out)
        self.assertEqual(self.result("last"), "8")
        self.assertEqual(self.result("s.Value()"), "8")

    def test_go_side_change_sends_update(self):
        op, _ = self.open_slider()
        out = self.run_cell("s.SetValue(42)")
        ups = [m for m in out if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == op["content"]["comm_id"]]
        self.assertEqual(ups[0]["content"]["data"], {"method": "update", "state": {"value": 42}, "buffer_paths": []})

    def test_request_state(self):
        op, _ = self.open_slider(value=13)
        cid = op["content"]["comm_id"]
        mid = self.comm_send(cid, {"method": "request_state"})
        out = self.drain(mid)
        ups = [m for m in out if m["msg_type"] == "comm_msg"]
        self.assertEqual(len(ups), 1, out)
        d = ups[0]["content"]["data"]
        self.assertEqual(d["method"], "update")
        self.assertEqual(d["state"]["value"], 13)
        self.assertEqual(d["state"]["_model_name"], "IntSliderModel")

    def test_request_state_after_reconnect(self):
        op, _ = self.open_slider(value=21)
        cid = op["content"]["comm_id"]
        self.kc.stop_channels()
        kc = self.km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=TIMEOUT)
        type(self).kc = kc
        self.kc = kc
        mid = self.kc.comm_info(target_name="jupyter.widget")
        reply = self.kc.get_shell_msg(timeout=TIMEOUT)
        while reply["parent_header"].get("msg_id") != mid:
            reply = self.kc.get_shell_msg(timeout=TIMEOUT)
        self.assertIn(cid, reply["content"]["comms"])
        self.assertEqual(reply["content"]["comms"][cid], {"target_name": "jupyter.widget"})
        mid = self.comm_send(cid, {"method": "request_state"})
        ups = [m for m in self.drain(mid) if m["msg_type"] == "comm_msg"]
        self.assertEqual(ups[0]["content"]["data"]["state"]["value"], 21)

    def test_control_comm_update_states(self):
        op, _ = self.open_slider(value=3)
        cid = op["content"]["comm_id"]
        ctl = "ctl-" + cid
        msg = self.kc.session.msg("comm_open", {"comm_id": ctl, "target_name": "jupyter.widget.control", "data": {}})
        self.kc.shell_channel.send(msg)
        out = self.drain(msg["header"]["msg_id"])
        self.assertFalse([m for m in out if m["msg_type"] == "comm_close"], out)
        mid = self.comm_send(ctl, {"method": "request_states"})
        ups = [m for m in self.drain(mid) if m["msg_type"] == "comm_msg"]
        self.assertEqual(len(ups), 1)
        d = ups[0]["content"]["data"]
        self.assertEqual(d["method"], "update_states")
        s = d["states"][cid]
        self.assertEqual((s["model_name"], s["model_module"], s["model_module_version"]),
                         ("IntSliderModel", "@jupyter-widgets/controls", "2.0.0"))
        self.assertEqual(s["state"]["value"], 3)

    def test_unknown_target_closed(self):
        msg = self.kc.session.msg("comm_open", {"comm_id": "x1", "target_name": "no.such.target", "data": {}})
        self.kc.shell_channel.send(msg)
        out = self.drain(msg["header"]["msg_id"])
        self.assertTrue([m for m in out if m["msg_type"] == "comm_close"], out)

    def test_buffers_both_ways(self):
        op, _ = self.open_slider()
        cid = op["content"]["comm_id"]
        out = self.run_cell('s.Set("blob", []byte{1, 2, 3})')
        ups = [m for m in out if m["msg_type"] == "comm_msg"]
        self.assertEqual(ups[0]["content"]["data"]["buffer_paths"], [["blob"]])
        self.assertEqual([bytes(b) for b in ups[0]["buffers"]], [b"\x01\x02\x03"])
        self.assertNotIn("blob", ups[0]["content"]["data"]["state"])
        mid = self.comm_send(cid, {"method": "update", "state": {}, "buffer_paths": [["blob"]]}, buffers=[b"\x07\x08"])
        out = self.drain(mid)
        echo = [m for m in out if m["msg_type"] == "comm_msg"][0]
        self.assertEqual([bytes(b) for b in echo["buffers"]], [b"\x07\x08"])
        self.assertEqual(self.result('fmt.Sprint(s.Get("blob"))'), '"[7 8]"')

    def test_button_click_custom(self):
        out = self.run_cell('clicks := 0\nb := widget.NewButton("go")\nb.OnClick(func() { clicks++ })\nb')
        cid = [m for m in out if m["msg_type"] == "comm_open"
               and m["content"]["data"]["state"]["_model_name"] == "ButtonModel"][0]["content"]["comm_id"]
        for _ in range(3):
            self.drain(self.comm_send(cid, {"method": "custom", "content": {"event": "click"}}))
        self.assertEqual(self.result("clicks"), "3")

    def test_200_updates_all_answered(self):
        op, _ = self.open_slider()
        cid = op["content"]["comm_id"]
        self.run_cell('n200 := 0\ns.Observe("value", func(c widget.Change) { n200++ })')
        ids = [self.comm_send(cid, {"method": "update", "state": {"value": i % 100}, "buffer_paths": []})
               for i in range(1, 201)]
        pending = set(ids)
        deadline = time.time() + 300
        while pending and time.time() < deadline:
            m = self.kc.get_iopub_msg(timeout=TIMEOUT)
            if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                pending.discard(m["parent_header"].get("msg_id"))
        self.assertFalse(pending, f"{len(pending)} of 200 updates never answered with idle")
        # values repeat (i % 100): only real changes reach the observer; the slider starts at 5
        changes = sum(1 for i in range(1, 201) if (i % 100) != ((i - 1) % 100 if i > 1 else 5))
        self.assertEqual(self.result("n200"), str(changes))
        self.assertEqual(self.result("s.Value()"), "0")

    def test_interrupt_callback(self):
        op, _ = self.open_slider()
        cid = op["content"]["comm_id"]
        self.run_cell('hits := 0\nfunc spin(c widget.Change) { hits++; if c.Int() == 99 { fmt.Println("spinning"); for {} } }\ns.Observe("value", spin)')
        mid = self.comm_send(cid, {"method": "update", "state": {"value": 99}, "buffer_paths": []})
        while True:  # interrupt once the callback spins (its print is the event)
            m = self.kc.get_iopub_msg(timeout=TIMEOUT)
            if (m["parent_header"].get("msg_id") == mid and m["msg_type"] == "comm_msg"
                    and "spinning\n" in self.outputs_text([m], m["content"]["comm_id"])):
                break
        self.km.interrupt_kernel()
        self.drain(mid)  # idle comes after the interrupted callback
        self.drain(self.comm_send(cid, {"method": "update", "state": {"value": 50}, "buffer_paths": []}))
        self.assertEqual(self.result("hits"), "2")

    def interrupt_spinning_cell(self):
        """Runs a cell that loops without calls, interrupts it once it runs (its print is the
        event) and checks that it ended with a KeyboardInterrupt."""
        mid = self.kc.execute('fmt.Println("spinning")\nfor {}')
        while True:
            m = self.kc.get_iopub_msg(timeout=TIMEOUT)
            if (m["parent_header"].get("msg_id") == mid and m["msg_type"] == "stream"
                    and "spinning" in m["content"]["text"]):
                break
        self.km.interrupt_kernel()
        reply = self.kc.get_shell_msg(timeout=TIMEOUT)
        while reply["parent_header"].get("msg_id") != mid:
            reply = self.kc.get_shell_msg(timeout=TIMEOUT)
        self.assertEqual((reply["content"]["status"], reply["content"].get("ename")), ("error", "KeyboardInterrupt"))
        self.drain(mid)

    def test_closures_run_after_an_interrupted_cell(self):
        # callbacks made inside function bodies: an Observe closure, a button's OnClick, an
        # Interact function; then a later cell is interrupted, and the page's events must still
        # run them, their prints landing in the Outputs of the cells that made them.
        op, _ = self.open_slider()
        cid = op["content"]["comm_id"]
        self.run_cell('func watch(w *widget.IntSlider) { w.Observe("value", func(c widget.Change) { fmt.Println("seen", c.Int()) }) }\nwatch(s)')
        out = self.run_cell('func mkButton() *widget.Button { b := widget.NewButton("go"); b.OnClick(func() { fmt.Println("clicked") }); return b }\nbt := mkButton()\nbt')
        bid = [m for m in out if m["msg_type"] == "comm_open"][0]["content"]["comm_id"]
        out = self.run_cell('func mkInteract(k int) *widget.Box { return widget.Interact(func(n int) { fmt.Println("n times k", n*k) }, 4) }\nia := mkInteract(3)\nia')
        sliders = [m for m in out if m["msg_type"] == "comm_open"
                   and m["content"]["data"]["state"]["_model_name"] == "IntSliderModel"]
        self.assertEqual(len(sliders), 1, out)
        self.interrupt_spinning_cell()
        out = self.drain(self.comm_send(cid, {"method": "update", "state": {"value": 7}, "buffer_paths": []}))
        texts = [t for m in out if m["msg_type"] == "comm_msg" for t in self.outputs_text([m], m["content"]["comm_id"])]
        self.assertIn("seen 7\n", texts, out)
        out = self.drain(self.comm_send(bid, {"method": "custom", "content": {"event": "click"}}))
        texts = [t for m in out if m["msg_type"] == "comm_msg" for t in self.outputs_text([m], m["content"]["comm_id"])]
        self.assertIn("clicked\n", texts, out)
        scid = sliders[0]["content"]["comm_id"]
        out = self.drain(self.comm_send(scid, {"method": "update", "state": {"value": 5}, "buffer_paths": []}))
        texts = [t for m in out if m["msg_type"] == "comm_msg" for t in self.outputs_text([m], m["content"]["comm_id"])]
        self.assertIn("n times k 15\n", texts, out)
        # a cell's loop without calls stays interruptible, again and again
        self.interrupt_spinning_cell()
        self.assertEqual(self.result("1 + 1"), "2")

    def test_close_sends_comm_close(self):
        op, _ = self.open_slider()
        cid = op["content"]["comm_id"]
        out = self.run_cell("s.Close()")
        self.assertTrue([m for m in out if m["msg_type"] == "comm_close" and m["content"]["comm_id"] == cid], out)
        mid = self.kc.comm_info(target_name="jupyter.widget")
        reply = self.kc.get_shell_msg(timeout=TIMEOUT)
        while reply["parent_header"].get("msg_id") != mid:
            reply = self.kc.get_shell_msg(timeout=TIMEOUT)
        self.assertNotIn(cid, reply["content"]["comms"])

    def outputs_text(self, msgs, comm_id):
        """The stream text an Output widget's comm_open and updates in msgs carry."""
        texts = []
        for m in msgs:
            if m["msg_type"] not in ("comm_open", "comm_msg") or m["content"]["comm_id"] != comm_id:
                continue
            st = m["content"]["data"].get("state", {})
            texts += [o.get("text", "") for o in st.get("outputs", [])]
        return texts

    def output_ids(self, msgs):
        return [m["content"]["comm_id"] for m in msgs if m["msg_type"] == "comm_open"
                and m["content"]["data"]["state"]["_model_name"] == "OutputModel"]

    def test_output_capture_takes_prints(self):
        out = self.run_cell('co := widget.NewOutput()\nfmt.Println("before")\n'
                            'co.Capture(func() { fmt.Println("captured") })\nfmt.Println("after")\nco')
        streams = "".join(m["content"]["text"] for m in out if m["msg_type"] == "stream")
        self.assertEqual(streams, "before\nafter\n", out)
        cid = self.output_ids(out)[0]
        self.assertIn("captured\n", self.outputs_text(out, cid), out)
        # a callback that runs later captures into it too
        op, _ = self.open_slider()
        self.run_cell('s.Observe("value", func(c widget.Change) { co.Capture(func() { fmt.Println("cb", c.Int()) }) })')
        out = self.drain(self.comm_send(op["content"]["comm_id"], {"method": "update", "state": {"value": 9}, "buffer_paths": []}))
        self.assertIn("captured\ncb 9\n", self.outputs_text(out, cid), out)
        self.assertFalse([m for m in out if m["msg_type"] == "stream"], out)

    def test_interact_output_in_its_output(self):
        out = self.run_cell('ia := widget.Interact(func(n int) { fmt.Println("n is", n) }, 4)\nia')
        self.assertFalse([m for m in out if m["msg_type"] == "stream"], out)
        texts = [t for cid in self.output_ids(out) for t in self.outputs_text(out, cid)]
        self.assertIn("n is 4\n", texts, out)

    def test_dropped_widget_closed(self):
        cid = self.result('func mkDropped() string { return widget.NewIntSlider(1, 0, 10).ModelID() }\nmkDropped()').strip('"')
        msgs = self.run_cell('import "runtime"\nruntime.GC()') + self.others
        deadline = time.time() + TIMEOUT
        while not [m for m in msgs if m["msg_type"] == "comm_close" and m["content"]["comm_id"] == cid]:
            self.assertLess(time.time(), deadline, "no comm_close for the dropped slider")
            msgs.append(self.kc.get_iopub_msg(timeout=TIMEOUT))
        mid = self.kc.comm_info(target_name="jupyter.widget")
        reply = self.kc.get_shell_msg(timeout=TIMEOUT)
        while reply["parent_header"].get("msg_id") != mid:
            reply = self.kc.get_shell_msg(timeout=TIMEOUT)
        self.assertNotIn(cid, reply["content"]["comms"])


if __name__ == "__main__":
    r = unittest.main(argv=sys.argv[:1], verbosity=2, exit=False).result
    sys.exit(0 if r.wasSuccessful() else 1)
