"""A tokenizer of one id per character (id 0: pad and end of text, left out when decoding), for tests
that fake a decoder's generate() and need prompts and questions to round-trip exactly."""


class CharTokenizer:
    eos_token_id = pad_token_id = 0

    def __call__(self, text):
        return {"input_ids": [ord(c) for c in text]}

    def decode(self, ids, skip_special_tokens=True):
        return "".join(chr(i) for i in ids if i)
