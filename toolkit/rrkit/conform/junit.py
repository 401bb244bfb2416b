"""JUnit XML, the one format every CI reads, for both conformance suites: one test suite, a test case per run,
a failure per broken requirement."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from xml.etree import ElementTree


@dataclass(frozen=True)
class Case:
    """One test case: where it belongs, its name, its failures as (message, text), and what it printed."""

    classname: str
    name: str
    failures: Sequence[tuple[str, str]] = ()
    output: str = ""


@dataclass(frozen=True)
class Suite:
    name: str
    properties: dict[str, str] = field(default_factory=dict)
    cases: Sequence[Case] = ()

    def to_xml(self) -> str:
        suite = ElementTree.Element(
            "testsuite",
            name=self.name,
            tests=str(len(self.cases)),
            failures=str(sum(bool(case.failures) for case in self.cases)),
            errors="0",
            skipped="0",
        )
        properties = ElementTree.SubElement(suite, "properties")
        for name, value in self.properties.items():
            ElementTree.SubElement(properties, "property", name=name, value=value)
        for case in self.cases:
            element = ElementTree.SubElement(suite, "testcase", classname=case.classname, name=case.name)
            for message, text in case.failures:
                ElementTree.SubElement(element, "failure", message=message).text = text
            ElementTree.SubElement(element, "system-out").text = case.output
        return ElementTree.tostring(suite, encoding="unicode", xml_declaration=True)
