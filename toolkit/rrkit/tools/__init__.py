"""Tools that use the layers below: cassettes shown, diffed and replayed as checks."""
