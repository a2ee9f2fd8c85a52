"""Stage 1, reading: the files TensorFlow writes (tfdbg dumps, XPlane profiles, text
logs) into reader facts, with the cache that keeps them and run discovery."""
