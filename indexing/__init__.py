"""How facts are indexed: text analysis for full text, the embedders, the vector store and the
raw SQL of both channels. Below `facts`, which stores through it; `retrieval` searches with it."""
