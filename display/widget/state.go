package widget

import "encoding/base64"

// NotebookState is every live widget's state as a notebook's metadata keeps it (under
// metadata.widgets[StateMIME]), so an executed notebook shows its widgets' last values when
// opened; nil when there are none. Binary values are stored base64-encoded.
func NotebookState() map[string]any {
	all := allStates()
	if len(all) == 0 {
		return nil
	}
	for id, e := range all {
		entry := e.(map[string]any)
		st, paths, bufs := splitBuffers(entry["state"].(map[string]any))
		entry["state"] = st
		if len(bufs) > 0 {
			var bs []any
			for i, b := range bufs {
				bs = append(bs, map[string]any{"path": paths[i], "encoding": "base64", "data": base64.StdEncoding.EncodeToString(b)})
			}
			entry["buffers"] = bs
		}
		all[id] = entry
	}
	return map[string]any{"version_major": 2, "version_minor": 0, "state": all}
}
