"""What every call to a model endpoint goes through: the key kept out of every text
(:mod:`.secrets`), a bounded wait between attempts (:mod:`.retry`), and an answer of
bounded size (:mod:`.transport`, which imports httpx: import it where a client is built).
"""
