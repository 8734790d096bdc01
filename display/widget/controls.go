package widget

import (
	"fmt"
	"time"
)

func description(d string) T { return T{"description": d, "description_allow_html": false} }

func sliderDefaults(format string) T {
	return T{"orientation": "horizontal", "readout": true, "readout_format": format, "continuous_update": true,
		"disabled": false, "behavior": "drag-tap", "style": nil, "description": "", "description_allow_html": false}
}

// IntSlider is a slider of integers (ipywidgets.IntSlider).
type IntSlider struct{ *Model }

// NewIntSlider makes an integer slider at value in [min, max] with step 1; traits set others
// (description, step, orientation, readout_format, continuous_update, ...).
func NewIntSlider(value, min, max int, traits ...T) *IntSlider {
	d := sliderDefaults("d")
	d["value"], d["min"], d["max"], d["step"] = value, min, max, 1
	return &IntSlider{controlModel("IntSlider", d, traits)}
}

// Value is the slider's value.
func (s *IntSlider) Value() int { return s.GetInt("value") }

// SetValue moves the slider.
func (s *IntSlider) SetValue(v int) { s.Set("value", v) }

// FloatSlider is a slider of floats (ipywidgets.FloatSlider).
type FloatSlider struct{ *Model }

// NewFloatSlider makes a float slider at value in [min, max] with step (max-min)/100.
func NewFloatSlider(value, min, max float64, traits ...T) *FloatSlider {
	d := sliderDefaults(".2f")
	d["value"], d["min"], d["max"], d["step"] = value, min, max, (max-min)/100
	return &FloatSlider{controlModel("FloatSlider", d, traits)}
}

// Value is the slider's value.
func (s *FloatSlider) Value() float64 { return s.GetFloat("value") }

// SetValue moves the slider.
func (s *FloatSlider) SetValue(v float64) { s.Set("value", v) }

// FloatLogSlider is a slider on a log scale: value = base**exponent, exponent in [min, max].
type FloatLogSlider struct{ *Model }

// NewFloatLogSlider makes a log slider at value with exponents of base 10 in [min, max].
func NewFloatLogSlider(value, min, max float64, traits ...T) *FloatLogSlider {
	d := sliderDefaults(".3g")
	d["value"], d["min"], d["max"], d["step"], d["base"] = value, min, max, 0.1, 10.0
	return &FloatLogSlider{controlModel("FloatLogSlider", d, traits)}
}

// Value is the slider's value.
func (s *FloatLogSlider) Value() float64 { return s.GetFloat("value") }

// SetValue moves the slider.
func (s *FloatLogSlider) SetValue(v float64) { s.Set("value", v) }

// IntRangeSlider selects a range [lo, hi] of integers.
type IntRangeSlider struct{ *Model }

// NewIntRangeSlider makes a range slider at [lo, hi] in [min, max].
func NewIntRangeSlider(lo, hi, min, max int, traits ...T) *IntRangeSlider {
	d := sliderDefaults("d")
	d["value"], d["min"], d["max"], d["step"] = []int{lo, hi}, min, max, 1
	return &IntRangeSlider{controlModel("IntRangeSlider", d, traits)}
}

// Value is the range selected.
func (s *IntRangeSlider) Value() (lo, hi int) {
	v, _ := s.Get("value").([]any)
	if len(v) != 2 {
		return 0, 0
	}
	return toInt(v[0]), toInt(v[1])
}

// SetValue sets the range.
func (s *IntRangeSlider) SetValue(lo, hi int) { s.Set("value", []int{lo, hi}) }

// FloatRangeSlider selects a range [lo, hi] of floats.
type FloatRangeSlider struct{ *Model }

// NewFloatRangeSlider makes a range slider at [lo, hi] in [min, max].
func NewFloatRangeSlider(lo, hi, min, max float64, traits ...T) *FloatRangeSlider {
	d := sliderDefaults(".2f")
	d["value"], d["min"], d["max"], d["step"] = []float64{lo, hi}, min, max, (max-min)/100
	return &FloatRangeSlider{controlModel("FloatRangeSlider", d, traits)}
}

// Value is the range selected.
func (s *FloatRangeSlider) Value() (lo, hi float64) {
	v, _ := s.Get("value").([]any)
	if len(v) != 2 {
		return 0, 0
	}
	return toFloat(v[0]), toFloat(v[1])
}

// SetValue sets the range.
func (s *FloatRangeSlider) SetValue(lo, hi float64) { s.Set("value", []float64{lo, hi}) }

// Progress is a progress bar (IntProgress, or FloatProgress with NewFloatProgress).
type Progress struct{ *Model }

// NewIntProgress makes a progress bar at value of max.
func NewIntProgress(value, max int, traits ...T) *Progress {
	d := T{"value": value, "min": 0, "max": max, "orientation": "horizontal", "bar_style": "", "style": nil}
	for k, v := range description("") {
		d[k] = v
	}
	return &Progress{newProgress("IntProgress", d, traits)}
}

// NewFloatProgress makes a progress bar at value of max.
func NewFloatProgress(value, max float64, traits ...T) *Progress {
	d := T{"value": value, "min": 0.0, "max": max, "orientation": "horizontal", "bar_style": "", "style": nil}
	for k, v := range description("") {
		d[k] = v
	}
	return &Progress{newProgress("FloatProgress", d, traits)}
}

func newProgress(name string, d T, traits []T) *Model {
	d["_dom_classes"], d["layout"], d["tabbable"], d["tooltip"] = []any{}, nil, nil, nil
	return newModel(controlsModule, controlsVersion, name+"Model", controlsModule, controlsVersion, "ProgressView", d, traits)
}

// Value is the bar's value.
func (p *Progress) Value() float64 { return p.GetFloat("value") }

// SetValue sets the bar's value.
func (p *Progress) SetValue(v float64) { p.Set("value", v) }

// Number is a number entry: IntText, FloatText, BoundedIntText or BoundedFloatText.
type Number struct{ *Model }

// NewIntText makes an integer entry.
func NewIntText(value int, traits ...T) *Number {
	d := T{"value": value, "step": 1, "disabled": false, "continuous_update": false}
	return &Number{controlModel("IntText", merge(d, description("")), traits)}
}

// NewFloatText makes a float entry.
func NewFloatText(value float64, traits ...T) *Number {
	d := T{"value": value, "step": nil, "disabled": false, "continuous_update": false}
	return &Number{controlModel("FloatText", merge(d, description("")), traits)}
}

// NewBoundedIntText makes an integer entry bounded to [min, max].
func NewBoundedIntText(value, min, max int, traits ...T) *Number {
	d := T{"value": value, "min": min, "max": max, "step": 1, "disabled": false, "continuous_update": false}
	return &Number{controlModel("BoundedIntText", merge(d, description("")), traits)}
}

// NewBoundedFloatText makes a float entry bounded to [min, max].
func NewBoundedFloatText(value, min, max float64, traits ...T) *Number {
	d := T{"value": value, "min": min, "max": max, "step": nil, "disabled": false, "continuous_update": false}
	return &Number{controlModel("BoundedFloatText", merge(d, description("")), traits)}
}

// Value is the number entered.
func (n *Number) Value() float64 { return n.GetFloat("value") }

// Int is the number entered, rounded to an int.
func (n *Number) Int() int { return n.GetInt("value") }

// SetValue sets the number.
func (n *Number) SetValue(v float64) { n.Set("value", v) }

// Text is a one-line text entry (Text), a multi-line one (Textarea) or a Label, HTML or
// HTMLMath display of text.
type Text struct{ *Model }

// NewText makes a text entry.
func NewText(value string, traits ...T) *Text {
	d := T{"value": value, "placeholder": "", "disabled": false, "continuous_update": true}
	return &Text{controlModel("Text", merge(d, description("")), traits)}
}

// NewTextarea makes a multi-line text entry.
func NewTextarea(value string, traits ...T) *Text {
	d := T{"value": value, "placeholder": "", "disabled": false, "continuous_update": true, "rows": nil}
	return &Text{controlModel("Textarea", merge(d, description("")), traits)}
}

// NewLabel makes a label.
func NewLabel(value string, traits ...T) *Text {
	d := T{"value": value, "placeholder": ""}
	return &Text{controlModel("Label", merge(d, description("")), traits)}
}

// NewHTML makes a widget that shows an HTML fragment.
func NewHTML(value string, traits ...T) *Text {
	d := T{"value": value, "placeholder": ""}
	return &Text{controlModel("HTML", merge(d, description("")), traits)}
}

// Value is the text.
func (t *Text) Value() string { return t.GetString("value") }

// SetValue sets the text.
func (t *Text) SetValue(v string) { t.Set("value", v) }

// Toggle is a Checkbox or a ToggleButton.
type Toggle struct{ *Model }

// NewCheckbox makes a checkbox.
func NewCheckbox(value bool, desc string, traits ...T) *Toggle {
	d := T{"value": value, "disabled": false, "indent": true}
	return &Toggle{controlModel("Checkbox", merge(d, description(desc)), traits)}
}

// NewToggleButton makes a button that stays down or up.
func NewToggleButton(value bool, desc string, traits ...T) *Toggle {
	d := T{"value": value, "disabled": false, "button_style": "", "icon": "", "tooltip": nil}
	return &Toggle{controlModel("ToggleButton", merge(d, description(desc)), traits)}
}

// Value is whether it is checked (down).
func (t *Toggle) Value() bool { return t.GetBool("value") }

// SetValue checks or unchecks it.
func (t *Toggle) SetValue(v bool) { t.Set("value", v) }

// Selection is a choice among labelled options: Dropdown, RadioButtons, Select, ToggleButtons
// (one index) or SelectMultiple (several).
type Selection struct {
	*Model
	multiple bool
}

func newSelection(name string, options []string, index int, traits []T) *Selection {
	d := T{"_options_labels": options, "index": index, "disabled": false}
	if index < 0 || index >= len(options) {
		d["index"] = nil
	}
	switch name {
	case "Select":
		d["rows"] = 5
	case "ToggleButtons":
		d["button_style"], d["tooltips"], d["icons"], d["style"] = "", []string{}, []string{}, nil
	}
	return &Selection{Model: controlModel(name, merge(d, description("")), traits)}
}

// NewDropdown makes a drop-down of options with options[index] selected (-1: none).
func NewDropdown(options []string, index int, traits ...T) *Selection {
	return newSelection("Dropdown", options, index, traits)
}

// NewRadioButtons makes radio buttons.
func NewRadioButtons(options []string, index int, traits ...T) *Selection {
	return newSelection("RadioButtons", options, index, traits)
}

// NewSelect makes a list box of options.
func NewSelect(options []string, index int, traits ...T) *Selection {
	return newSelection("Select", options, index, traits)
}

// NewToggleButtons makes a row of buttons of which one is down.
func NewToggleButtons(options []string, index int, traits ...T) *Selection {
	return newSelection("ToggleButtons", options, index, traits)
}

// NewSelectMultiple makes a list box where several options can be selected.
func NewSelectMultiple(options []string, selected []int, traits ...T) *Selection {
	if selected == nil {
		selected = []int{}
	}
	d := T{"_options_labels": options, "index": selected, "disabled": false, "rows": 5}
	return &Selection{Model: controlModel("SelectMultiple", merge(d, description("")), traits), multiple: true}
}

// Options are the labels offered.
func (s *Selection) Options() []string {
	v, _ := s.Get("_options_labels").([]any)
	out := make([]string, len(v))
	for i, e := range v {
		out[i] = toString(e)
	}
	return out
}

// Index is the selected option's index (-1: none); for SelectMultiple, the first selected.
func (s *Selection) Index() int {
	switch v := s.Get("index").(type) {
	case float64:
		return toInt(v)
	case []any:
		if len(v) > 0 {
			return toInt(v[0])
		}
	}
	return -1
}

// Indices are the selected indices (SelectMultiple; one or none for the others).
func (s *Selection) Indices() []int {
	switch v := s.Get("index").(type) {
	case float64:
		return []int{toInt(v)}
	case []any:
		out := make([]int, len(v))
		for i, e := range v {
			out[i] = toInt(e)
		}
		return out
	}
	return []int{}
}

// Value is the selected option's label ("" if none).
func (s *Selection) Value() string {
	i, opts := s.Index(), s.Options()
	if i < 0 || i >= len(opts) {
		return ""
	}
	return opts[i]
}

// SetIndex selects options[i] (-1: none).
func (s *Selection) SetIndex(i int) {
	if s.multiple {
		s.Set("index", []int{i})
		return
	}
	if i < 0 {
		s.Set("index", nil)
		return
	}
	s.Set("index", i)
}

// SetValue selects the option labelled v; it fails for a label not offered.
func (s *Selection) SetValue(v string) error {
	for i, o := range s.Options() {
		if o == v {
			s.SetIndex(i)
			return nil
		}
	}
	return fmt.Errorf("widget: %q is not an option of this %s", v, s.kind)
}

// Button is a push button; OnClick runs Go code of the cell for each click.
type Button struct{ *Model }

// NewButton makes a button labelled desc.
func NewButton(desc string, traits ...T) *Button {
	d := T{"description": desc, "button_style": "", "icon": "", "tooltip": nil, "disabled": false, "style": nil}
	return &Button{controlModel("Button", d, traits)}
}

// OnClick runs fn for each click in the page; its output goes to the cell that called OnClick.
func (b *Button) OnClick(fn func()) {
	b.OnMsg(func(content map[string]any, _ [][]byte) {
		if content["event"] == "click" {
			fn()
		}
	})
}

// Play is a play/pause control that steps value from min to max every interval milliseconds.
type Play struct{ *Model }

// NewPlay makes a Play control at value in [min, max] stepping by step every interval ms.
func NewPlay(value, min, max, step, interval int, traits ...T) *Play {
	d := T{"value": value, "min": min, "max": max, "step": step, "interval": interval, "playing": false,
		"repeat": false, "show_repeat": true, "disabled": false}
	return &Play{controlModel("Play", merge(d, description("")), traits)}
}

// Value is the current step.
func (p *Play) Value() int { return p.GetInt("value") }

// SetValue sets the step.
func (p *Play) SetValue(v int) { p.Set("value", v) }

// DatePicker picks a calendar date.
type DatePicker struct{ *Model }

// NewDatePicker makes a date picker at t's date (the zero time: no date).
func NewDatePicker(t time.Time, traits ...T) *DatePicker {
	d := T{"value": dateValue(t), "disabled": false, "min": nil, "max": nil, "step": 1}
	return &DatePicker{controlModel("DatePicker", merge(d, description("")), traits)}
}

// dateValue is a date as the protocol sends it: {year, month (0-11), date}.
func dateValue(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return map[string]any{"year": t.Year(), "month": int(t.Month()) - 1, "date": t.Day()}
}

// Value is the date picked (the zero time for none), at midnight UTC.
func (p *DatePicker) Value() time.Time {
	m, _ := p.Get("value").(map[string]any)
	if m == nil {
		return time.Time{}
	}
	return time.Date(toInt(m["year"]), time.Month(toInt(m["month"])+1), toInt(m["date"]), 0, 0, 0, 0, time.UTC)
}

// SetValue sets the date.
func (p *DatePicker) SetValue(t time.Time) { p.Set("value", dateValue(t)) }

// ColorPicker picks a colour, as "#rrggbb" or a CSS colour name.
type ColorPicker struct{ *Model }

// NewColorPicker makes a colour picker at value.
func NewColorPicker(value string, traits ...T) *ColorPicker {
	d := T{"value": value, "concise": false, "disabled": false}
	return &ColorPicker{controlModel("ColorPicker", merge(d, description("")), traits)}
}

// Value is the colour.
func (c *ColorPicker) Value() string { return c.GetString("value") }

// SetValue sets the colour.
func (c *ColorPicker) SetValue(v string) { c.Set("value", v) }

// Box lays out children: HBox, VBox, GridBox, Tab or Accordion.
type Box struct{ *Model }

func newBox(name string, children []Widget, d T, traits []T) *Box {
	d["children"], d["box_style"] = children, ""
	return &Box{controlModel(name, d, traits)}
}

// NewHBox lays children out in a row.
func NewHBox(children ...Widget) *Box { return newBox("HBox", children, T{}, nil) }

// NewVBox lays children out in a column.
func NewVBox(children ...Widget) *Box { return newBox("VBox", children, T{}, nil) }

// NewGridBox lays children out on a CSS grid; set its layout's grid_template_columns.
func NewGridBox(children ...Widget) *Box { return newBox("GridBox", children, T{}, nil) }

// NewTab shows one child at a time under tabs titled titles.
func NewTab(titles []string, children ...Widget) *Box {
	return newBox("Tab", children, T{"titles": titles, "selected_index": 0}, nil)
}

// NewAccordion shows children in collapsible sections titled titles.
func NewAccordion(titles []string, children ...Widget) *Box {
	return newBox("Accordion", children, T{"titles": titles, "selected_index": nil}, nil)
}

// SetChildren replaces the box's children.
func (b *Box) SetChildren(children ...Widget) { b.Set("children", children) }

// Layout is a widget's CSS layout (width, height, margin, display, grid_* ...).
type Layout struct{ *Model }

// Style is a widget's style (description_width, handle_color, bar_color, button_color ...).
type Style struct{ *Model }

// Layout returns the widget's layout model, making it on first use: set CSS properties on it
// with Set ("width", "300px").
func (m *Model) Layout() *Layout {
	if id, ok := m.Get("layout").(string); ok && len(id) > len(modelRef) {
		if l := lookup(id[len(modelRef):]); l != nil {
			return &Layout{l}
		}
	}
	l := &Layout{newModel(baseModule, baseVersion, "LayoutModel", baseModule, baseVersion, "LayoutView", T{}, nil)}
	m.Set("layout", l)
	return l
}

// Style returns the widget's style model, making it on first use (the style model of its
// kind: SliderStyle, ButtonStyle, ProgressStyle, ToggleButtonsStyle, else DescriptionStyle).
func (m *Model) Style() *Style {
	if id, ok := m.Get("style").(string); ok && len(id) > len(modelRef) {
		if s := lookup(id[len(modelRef):]); s != nil {
			return &Style{s}
		}
	}
	name := "DescriptionStyle"
	switch m.kind {
	case "IntSlider", "FloatSlider", "FloatLogSlider", "IntRangeSlider", "FloatRangeSlider":
		name = "SliderStyle"
	case "Button":
		name = "ButtonStyle"
	case "IntProgress", "FloatProgress":
		name = "ProgressStyle"
	case "ToggleButtons":
		name = "ToggleButtonsStyle"
	case "Checkbox":
		name = "CheckboxStyle"
	case "ToggleButton":
		name = "ToggleButtonStyle"
	}
	s := &Style{newModel(controlsModule, controlsVersion, name+"Model", baseModule, baseVersion, "StyleView",
		T{"description_width": ""}, nil)}
	m.Set("style", s)
	return s
}

// JSLink links two widgets' traits in the page (ipywidgets.jslink): the kernel is not involved
// in its updates. Close the returned model to unlink.
func JSLink(source Widget, sourceTrait string, target Widget, targetTrait string) *Model {
	l := newModel(controlsModule, controlsVersion, "LinkModel", "", controlsVersion, "", T{
		"source": []any{source, sourceTrait}, "target": []any{target, targetTrait}}, nil)
	// The link has no view: it lives as long as either end, kept or not by the cell.
	source.Widget().keepRefs(T{"link": l})
	target.Widget().keepRefs(T{"link": l})
	return l
}

// Link keeps two widgets' traits equal in the kernel (ipywidgets.link): a change of either,
// from the page or from Go, sets the other. The target takes the source's value at once.
func Link(source Widget, sourceTrait string, target Widget, targetTrait string) {
	s, t := source.Widget(), target.Widget()
	t.Set(targetTrait, s.Get(sourceTrait))
	s.observeNow(sourceTrait, func(c Change) { t.Set(targetTrait, c.New) })
	t.observeNow(targetTrait, func(c Change) { s.Set(sourceTrait, c.New) })
}

func merge(a, b T) T {
	for k, v := range b {
		a[k] = v
	}
	return a
}
