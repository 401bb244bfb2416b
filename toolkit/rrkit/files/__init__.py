"""rrkit's files read and written: text within its size limit, YAML and JSON documents (the alias-bomb guard),
validation errors that name the file and the place, atomic writes, and which kind of rrkit file a path holds."""
