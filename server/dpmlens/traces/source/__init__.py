"""The join with a source tree: driver structs (mapping), delay call sites, runtime PM callbacks."""
