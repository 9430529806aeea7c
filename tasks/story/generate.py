"""A ROCStories-format set written offline from templates and word lists (it stands in for
ROCStories, which is not available offline).

Each story is five sentences about one character at one place: arriving, a goal tied to the place
(what one does there and with what), a problem, what the character does about it, and how it ends,
with the feeling following from the outcome. The words of sentence t+1 depend on sentences 1..t
(the place fixes the objects, the problem fixes the remedies, the outcome the feeling), so a keyword
predictor has something to learn; adjectives with WordNet antonyms (hot/cold, early/late, ...) give
the -ANT experiment material.
"""

from __future__ import annotations

import random
from pathlib import Path

from megazoo.tasks.story.data import Story, split_stories, write_rocstories

NAMES = {"male": "Tom John James Mike David Robert Paul Mark Steve Kevin Brian Jason Eric Adam Peter Frank Gary Tim "
                 "Carl Dan".split(),
         "female": "Anna Mary Susan Linda Karen Lisa Sarah Emily Julia Laura Kate Amy Rachel Helen Nancy Jenny Lucy "
                   "Megan Sophie Ella".split()}
PRONOUNS = {"male": ("He", "he", "his", "him"), "female": ("She", "she", "her", "her")}
# place: (verbs, objects, worker)
PLACES = {
    "bakery": (["buy", "order"], ["bread", "cake", "cookies", "pie", "muffins"], "baker"),
    "library": (["borrow", "read", "find"], ["book", "novel", "magazine", "map"], "librarian"),
    "park": (["fly", "throw", "find"], ["kite", "ball", "frisbee", "bench"], "ranger"),
    "beach": (["build", "find", "collect"], ["sandcastle", "shells", "towel", "umbrella"], "lifeguard"),
    "zoo": (["see", "feed", "photograph"], ["lion", "elephant", "monkey", "giraffe", "penguin"], "zookeeper"),
    "market": (["buy", "pick"], ["apples", "fish", "vegetables", "cheese", "flowers"], "vendor"),
    "gym": (["lift", "use", "try"], ["weights", "treadmill", "bike", "rope"], "trainer"),
    "restaurant": (["order", "eat", "try"], ["pizza", "soup", "pasta", "steak", "salad"], "waiter"),
    "school": (["pass", "finish", "study for"], ["test", "homework", "project", "exam"], "teacher"),
    "garden": (["plant", "water", "pick"], ["tomatoes", "flowers", "carrots", "roses"], "neighbor"),
    "lake": (["catch", "row", "rent"], ["fish", "boat", "canoe", "trout"], "fisherman"),
    "mall": (["buy", "try on", "find"], ["shoes", "jacket", "dress", "watch", "hat"], "clerk"),
    "airport": (["catch", "board", "find"], ["flight", "plane", "gate", "suitcase"], "agent"),
    "kitchen": (["cook", "bake", "make"], ["dinner", "cookies", "soup", "pancakes"], "mother"),
    "farm": (["ride", "milk", "feed"], ["horse", "cow", "chickens", "goats"], "farmer"),
    "mountain": (["climb", "hike", "reach"], ["trail", "summit", "peak", "ridge"], "guide"),
    "museum": (["see", "visit", "draw"], ["painting", "statue", "dinosaur", "exhibit"], "guard"),
    "pool": (["swim in", "dive into", "clean"], ["pool", "water", "lane", "slide"], "lifeguard"),
}
ARRIVE = ["went to the {place}", "walked to the {place}", "drove to the {place}", "visited the {place}",
          "took the bus to the {place}", "arrived at the {place}"]
WHEN = ["on Saturday", "one morning", "after work", "early in the morning", "late at night", "on a hot day",
        "on a cold day", "with a friend", "with the family", "for the first time"]
GOAL = ["{P} wanted to {verb} the {obj}.", "{P} hoped to {verb} the {obj}.", "{P} really wanted to {verb} the {obj}.",
        "{P} planned to {verb} the {obj} today."]
# problem: (sentence, remedies)
PROBLEMS = [
    ("But the {place} was very crowded.", ["waited in a long line", "came back later", "asked the {worker} for help"]),
    ("But the {obj} was too expensive.", ["saved money for a week", "asked the {worker} for a discount",
                                          "found a cheaper one"]),
    ("Unfortunately it started to rain.", ["opened an umbrella", "waited inside until the rain stopped",
                                          "ran home quickly"]),
    ("But {p} forgot {pos} wallet at home.", ["borrowed money from a friend", "went back home to get it",
                                             "asked the {worker} to hold it"]),
    ("But the {place} was closed.", ["came back the next day", "called the {worker}", "found another one nearby"]),
    ("Sadly the {obj} was broken.", ["fixed it with tape", "asked the {worker} to repair it", "bought a new one"]),
    ("But it was too hot outside.", ["drank a lot of cold water", "rested in the shade", "came back in the evening"]),
    ("But the room was very dark.", ["turned on a light", "opened the curtains", "used a flashlight"]),
    ("But {p} was late.", ["ran as fast as possible", "took a taxi", "called ahead to apologize"]),
    ("But the floor was very dirty.", ["cleaned it with a mop", "asked the {worker} to clean it",
                                      "moved to a clean spot"]),
]
REMEDY = ["So {p} {remedy}.", "{P} {remedy}.", "{P} decided that {p} {remedy}.", "Luckily {p} {remedy}."]
GOOD = ["happy", "proud", "glad", "relieved", "excited", "calm"]
BAD = ["sad", "angry", "tired", "disappointed", "nervous", "upset"]
END_GOOD = ["In the end {p} got to {verb} the {obj} and felt {feel}.", "{P} felt {feel} when {p} finally got the {obj}.",
            "{P} went home {feel} and full of joy.", "It was a good day and {p} was {feel}."]
END_BAD = ["Still {p} could not {verb} the {obj} and felt {feel}.", "{P} went home {feel} without the {obj}.",
           "It was a long day and {p} was {feel}.", "{P} felt {feel} but promised to try again."]


def make_story(rng: random.Random, number: int) -> Story:
    gender = rng.choice(["male", "female"])
    name = rng.choice(NAMES[gender])
    P, p, pos, _ = PRONOUNS[gender]
    place = rng.choice(sorted(PLACES))
    verbs, objects, worker = PLACES[place]
    verb, obj = rng.choice(verbs), rng.choice(objects)
    problem, remedies = rng.choice(PROBLEMS)
    good = rng.random() < 0.7
    feel = rng.choice(GOOD if good else BAD)
    fill = {"P": P, "p": p, "pos": pos, "place": place, "obj": obj, "verb": verb, "worker": worker, "feel": feel}
    remedy = rng.choice(remedies).format(**fill)
    sentences = [f"{name} {rng.choice(ARRIVE).format(**fill)} {rng.choice(WHEN)}.",
                 rng.choice(GOAL).format(**fill), problem.format(**fill),
                 rng.choice(REMEDY).format(**{**fill, "remedy": remedy}),
                 rng.choice(END_GOOD if good else END_BAD).format(**fill)]
    sentences = [s[0].upper() + s[1:] for s in sentences]
    title = rng.choice([f"The {obj.title()}", f"At the {place.title()}", f"{name}'s Day"])
    return Story(f"gen-{number:05d}", title, sentences)


def generate_stories(n: int, seed: int = 0) -> list[Story]:
    rng = random.Random(seed)
    return [make_story(rng, i) for i in range(n)]


def write_generated(folder, n: int = 600, seed: int = 0) -> dict[str, Path]:
    """stories.csv (all) and the seeded 90/5/5 train.csv, valid.csv, test.csv in `folder`."""
    folder = Path(folder)
    stories = generate_stories(n, seed)
    out = {"stories": write_rocstories(folder / "stories.csv", stories)}
    for name, part in split_stories(stories, seed).items():
        out[name] = write_rocstories(folder / f"{name}.csv", part)
    return out
