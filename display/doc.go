// Package display is what notebook cells call to show things: HTML, Markdown, SVG, PNG and JSON
// outputs, displays updated in place, and progress bars for long work.
//
// The interpreter binds each running cell's context and output sink with Bind; compiled packages
// (gpuarray, cluster) read the cell's context with Context, so an interrupt reaches them too.
package display
