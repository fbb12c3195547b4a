"""ssgallery: compress biometric face galleries into super-sparse virtual prototypes."""

__version__ = "0.1.0"
