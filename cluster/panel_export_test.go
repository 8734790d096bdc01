package cluster

import "github.com/gpunotes/gpunotes/display/widget"

// PanelStateOf exposes a cluster panel's snapshot to the tests of package cluster_test.
func PanelStateOf(c *LocalCUDA) widget.PanelState { return c.panelState() }

// FormatBytes exposes the reprs' byte formatting to the tests of package cluster_test.
func FormatBytes(b uint64) string { return formatBytes(b) }
