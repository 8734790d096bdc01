"""GoEngine, the package's "papermill.engine" entry point: loading it registers GoTranslator.

GoEngine is defined before anything imports papermill, because papermill loads this entry point
while it is being imported: whichever of the two is imported first, papermill finds GoEngine.
"""


class GoEngine:
    """papermill's nbclient engine under the name "gpunotes" (`--engine gpunotes`); any engine
    runs Go notebooks once this package is installed."""

    @staticmethod
    def _nbclient():
        from papermill.engines import NBClientEngine

        return NBClientEngine

    @classmethod
    def execute_notebook(cls, *args, **kwargs):
        return cls._nbclient().execute_notebook(*args, **kwargs)

    @classmethod
    def nb_kernel_name(cls, *args, **kwargs):
        return cls._nbclient().nb_kernel_name(*args, **kwargs)

    @classmethod
    def nb_language(cls, *args, **kwargs):
        return cls._nbclient().nb_language(*args, **kwargs)


from . import translator  # noqa: E402,F401  (registers GoTranslator)
