"""Server-side apply's structured merge (sigs.k8s.io/structured-merge-diff): field paths and sets
(:mod:`.fieldpath`), type information (:mod:`.schema`), typed walks of objects (:mod:`.typed`), and the updater
that owns fields per manager and reports conflicts (:mod:`.update`). Pure: no I/O, objects are JSON dicts."""
