"""Papermill parameters for Go notebooks run by the gpunotes kernel.

papermill injects parameters by writing a cell in the notebook's language, through a translator
registered for the kernel name or the language. It finds no translator for Go, and it has no
entry-point group for translators; it does load every "papermill.engine" entry point when it is
imported. This package's entry point is engine.GoEngine (papermill's nbclient engine under the
name "gpunotes"), and loading it registers translator.GoTranslator for the kernel "gpunotes" and
the language "go".

The injected cell has the form `gpunotes run --param` writes: one assignment per parameter to
the variable the "parameters" cell declares (`N = 8000`, `SkipCPU = false`, `Label = "text"`).
As there, a text value is Go source (papermill's CLI leaves `-p SkipCPU false` as the text
"false") unless the parameters cell declares the variable a string (`Label := "x"` or
`var Label string`), which gets the text quoted; a name the cell does not declare is an error.
papermill hands translators no notebook, so this package notes the notebook papermill asks its
engines about just before it translates (papermill_engines.nb_language); without one (the
translator called on its own) text values are quoted. Install with `gpunotes install --papermill`.

Nothing here imports papermill when the package itself is imported: papermill imports its
entry points while it is being imported, and a module that imported papermill first would be
asked for its engine before it had defined it.
"""
