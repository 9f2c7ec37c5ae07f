"""GE graph dumps: protobuf text and JSON readers, and the in-memory model."""
