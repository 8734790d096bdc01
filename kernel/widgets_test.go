package kernel_test

import (
	"testing"
	"time"
)

// TestWidgetProtocol checks the Jupyter widget protocol 2.1.0 through jupyter_client: message
// shapes and versions, updates both ways with echo and busy/idle parents, request_state (after
// a reconnect too), the control comm, buffers, clicks, interrupts and 200 updates in a row.
func TestWidgetProtocol(t *testing.T) { runPy(t, "test_widgets.py", 8*time.Minute) }
