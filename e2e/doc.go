// Package e2e holds end-to-end tests that drive real clients: JupyterLab from the test
// virtualenv in Debian's chromium through playwright. The package itself has no code.
package e2e
