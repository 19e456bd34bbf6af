"""specstack: what does turning on speculative decoding in vLLM really change?"""

__version__ = "0.1.0"
